import type { Logger } from '../../infra/logger.js';

/** One outgoing e-mail: always exactly one recipient, always a plain-text and an HTML part. */
export interface MailMessage {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
  readonly html: string;
}

/** The port through which the core sends e-mail; the core never imports nodemailer. */
export interface Mailer {
  send(message: MailMessage): Promise<void>;
  close(): void;
}

/**
 * Sends `message` off the request path (the caller does not wait, so response time says nothing about
 * whether mail went out); a failure is logged as `failure`, naming the server and the recipient at most,
 * never the body and the token it carries.
 */
export function sendInBackground(
  mailer: Mailer,
  logger: Logger,
  message: MailMessage,
  failure: { readonly appId: string; readonly what: string },
): void {
  mailer.send(message).catch((error: unknown) => {
    logger.error(
      { err: { message: error instanceof Error ? error.message : String(error) }, appId: failure.appId },
      failure.what,
    );
  });
}
