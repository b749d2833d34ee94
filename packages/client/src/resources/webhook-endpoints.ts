import { type ApiRequester, segment } from '../api.js';
import type { RequestOptions } from '../http.js';
import type {
  CreateWebhookEndpointRequest,
  PostOptions,
  UpdateWebhookEndpointRequest,
  WebhookEndpoint,
  WebhookEndpointList,
  WebhookEndpointWithSecret,
} from '../types.js';

/** `/v1/webhook-endpoints`. */
export class WebhookEndpoints {
  constructor(private readonly api: ApiRequester) {}

  /**
   * The answer carries the signing secret, once: store it for verifyWebhook. Tollgate never stores
   * such an answer to replay it, so an `idempotencyKey` here is refused (TollgateError 400).
   */
  create(body: CreateWebhookEndpointRequest, options?: PostOptions): Promise<WebhookEndpointWithSecret> {
    return this.api.post<WebhookEndpointWithSecret>('/v1/webhook-endpoints', body, options);
  }

  list(options?: RequestOptions): Promise<WebhookEndpointList> {
    return this.api.get<WebhookEndpointList>('/v1/webhook-endpoints', undefined, options);
  }

  update(id: string, body: UpdateWebhookEndpointRequest, options?: RequestOptions): Promise<WebhookEndpoint> {
    return this.api.patch<WebhookEndpoint>(`/v1/webhook-endpoints/${segment(id)}`, body, options);
  }

  /** Answers nothing (204). */
  delete(id: string, options?: RequestOptions): Promise<void> {
    return this.api.delete<void>(`/v1/webhook-endpoints/${segment(id)}`, options);
  }

  /** A new signing secret; as with `create`, an `idempotencyKey` is refused (TollgateError 400). */
  rotateSecret(id: string, options?: PostOptions): Promise<WebhookEndpointWithSecret> {
    return this.api.post<WebhookEndpointWithSecret>(
      `/v1/webhook-endpoints/${segment(id)}/rotate-secret`,
      {},
      options,
    );
  }
}
