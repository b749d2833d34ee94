import type { Request } from 'express';
import type { ContainerType } from 'type-graphql';
import type { Principal } from '../core/principal.js';
import type { Logger } from '../infra/logger.js';
import { Loaders } from './loaders.js';

/**
 * What every resolver receives: the caller and this request's loaders. No services and no entity manager:
 * resolvers get their services in their constructor, and services own the entity manager.
 */
export interface GraphQLContext {
  readonly principal: Principal;
  readonly requestId: string;
  readonly log: Logger;
  /** The key the request was counted under (per-field limits spend the same caller's budget). */
  readonly rateLimitSubject: string;
  /** This request's dataloaders, for nested lists without one query per parent. */
  readonly loaders: Loaders;
  /**
   * Where type-graphql takes this server's resolver instances from. The schema is built once per process
   * while each server has its own services, so the instances travel with the request.
   */
  readonly resolvers: ContainerType;
}

/** Builds a request's context; a fresh loader registry per request, so nothing is cached across callers. */
export function createGraphQLContext(req: Request, resolvers: ContainerType): GraphQLContext {
  return {
    principal: req.principal,
    requestId: String(req.id),
    log: req.log,
    rateLimitSubject: req.rateLimitSubject ?? `ip:${req.ip ?? 'unknown'}`,
    loaders: new Loaders(),
    resolvers,
  };
}
