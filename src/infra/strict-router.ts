import { type RequestHandler, Router } from 'express';

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

/** What a strict router keeps of each of its layers (router 2.x): the path it was registered with. */
interface RegisteredLayer {
  readonly rawPath?: unknown;
}

/** The literal first segment of a registered path (`/customers/:id` → `customers`), if it has one. */
function literalFirstSegment(path: unknown): string | undefined {
  return typeof path === 'string' ? /^\/([\w.-]+)(?:\/|$)/.exec(path)?.[1] : undefined;
}

/**
 * `router` (a strict router mounted at `/`) entered only by requests whose first path segment starts one
 * of its paths. Express enters every router mounted at `/` for every request and tries each of its
 * layers in turn: with the `/v1` modules that was most of a request's routing. A router any of whose
 * paths does not start with a literal segment is returned unchanged. As the router is strict, segments
 * compare exactly (case included), which is how its own routes match.
 */
export function enteredByFirstSegment(router: Router): RequestHandler {
  const segments = new Set<string>();
  for (const layer of (router as unknown as { stack: readonly RegisteredLayer[] }).stack) {
    for (const path of [layer.rawPath].flat()) {
      const segment = literalFirstSegment(path);
      if (segment === undefined) return router;
      segments.add(segment);
    }
  }
  return (req, res, next) => {
    const end = req.path.indexOf('/', 1);
    const segment = req.path.slice(1, end === -1 ? undefined : end);
    if (segments.has(segment)) router(req, res, next);
    else next();
  };
}
