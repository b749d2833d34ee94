import type { Logger } from '../core/logger.js';
import type { Principal } from '../core/principal.js';
import type { Services } from '../services.js';

/** What every resolver receives: the caller and the core services. No entity manager: services own it. */
export interface GraphQLContext {
  readonly principal: Principal;
  readonly services: Services;
  readonly requestId: string;
  readonly log: Logger;
}
