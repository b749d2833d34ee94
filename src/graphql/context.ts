import type { MikroORM } from '@mikro-orm/postgresql';
import type { Request } from 'express';
import type { Principal } from '../core/principal.js';
import type { Logger } from '../infra/logger.js';
import type { Services } from '../services.js';
import { Loaders } from './loaders.js';

/** What every resolver receives: the caller and the core services. No entity manager: services own it. */
export interface GraphQLContext {
  readonly principal: Principal;
  readonly services: Services;
  readonly requestId: string;
  readonly log: Logger;
  /** The key the request was counted under (per-field limits spend the same caller's budget). */
  readonly rateLimitSubject: string;
  /** This request's dataloaders, for nested lists without one query per parent. */
  readonly loaders: Loaders;
}

/** Builds a request's context; a fresh loader registry per request, so nothing is cached across callers. */
export function createGraphQLContext(req: Request, services: Services, orm: MikroORM): GraphQLContext {
  return {
    principal: req.principal,
    services,
    requestId: String(req.id),
    log: req.log,
    rateLimitSubject: req.rateLimitSubject ?? `ip:${req.ip ?? 'unknown'}`,
    loaders: new Loaders(orm, req.principal),
  };
}
