import { Router } from 'express';

/**
 * Express matches paths case-insensitively and ignores a trailing slash unless told otherwise, so
 * `/V1/APPS/x/AUTH/MAGIC-LINK/` would reach the same handler as the real path while anything that
 * classifies requests by path (the per-IP budget of the public login endpoints) saw another path.
 * Every router is strict instead: one spelling per endpoint, any other is a 404.
 */
export const ROUTING_OPTIONS = { caseSensitive: true, strict: true } as const;

/** A router with the one spelling rule. Every `/v1` router is created here (v1.ts checks it). */
export function strictRouter(): Router {
  return Router(ROUTING_OPTIONS);
}

/** Whether `router` was made by `strictRouter` (Express keeps its options on the instance). */
export function isStrictRouter(router: Router): boolean {
  const options = router as unknown as { caseSensitive?: boolean; strict?: boolean };
  return options.caseSensitive === true && options.strict === true;
}
