import type { Response } from 'express';

/** What a route says on its request's access line instead of logging a line of its own. */
export interface AccessLineNote {
  /** Replaces the access line's message ("request completed"). */
  readonly message: string;
  /** Added to the access line's fields. */
  readonly fields: Readonly<Record<string, unknown>>;
}

const NOTES = new WeakMap<Response, AccessLineNote>();

/**
 * Puts `note` on the access line of the request `res` answers: a hot route that has one thing to say
 * about each request says it there, so each request writes one line, not two.
 */
export function noteOnAccessLine(res: Response, note: AccessLineNote): void {
  NOTES.set(res, note);
}

/** The note a route put on `res`'s access line, if any. */
export function accessLineNote(res: Response): AccessLineNote | undefined {
  return NOTES.get(res);
}
