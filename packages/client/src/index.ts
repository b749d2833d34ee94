export { TollgateAuth, type TollgateAuthOptions } from './auth.js';
export { type RateLimit, TollgateError } from './errors.js';
export type { TransportOptions } from './http.js';
export type { components, operations, paths } from './openapi.js';
export { Tollgate, type TollgateOptions } from './server.js';
export type * from './types.js';
export { verifyWebhook } from './webhooks.js';
