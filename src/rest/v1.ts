import { Router } from 'express';
import type { Services } from '../services.js';

/**
 * Every `/v1` path of the REST facade, mounted in one place so any endpoint is found from here.
 * Routes are thin: parse → service → presenter.
 */
export function v1Router(_services: Services): Router {
  const router = Router();
  return router;
}
