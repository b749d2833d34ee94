import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { ConflictError, NotFoundError, ValidationError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { type Principal, requireApiKey } from '../../core/principal.js';
import { idSchema, parseInput } from '../../core/validation.js';
import type { JobQueue } from '../../infra/job-queue.js';
import { App } from '../apps/app.entity.js';
import { DELIVERY_QUEUE, type DeliveryJob, type OutboundEvents } from './outbound-events.js';
import type { SecretBox } from './secret-box.js';
import { WebhookAttempt, WebhookDelivery } from './webhook-delivery.entity.js';
import { WebhookEndpoint } from './webhook-endpoint.entity.js';
import { newSigningSecret } from './webhook-signing.js';
import {
  createEndpointSchema,
  listDeliveriesSchema,
  MAX_ENDPOINTS_PER_APP,
  updateEndpointSchema,
} from './webhooks.schemas.js';

/** How long the previous secret keeps signing beside the new one after a rotation. */
export const PREVIOUS_SECRET_GRACE_MS = 24 * 60 * 60 * 1000;

/** Attempts shown with each delivery. */
const ATTEMPTS_SHOWN = 10;

export interface EndpointWithSecret {
  readonly endpoint: WebhookEndpoint;
  /** Shown once: only its encrypted form is kept. */
  readonly secret: string;
}

export interface DeliveryWithAttempts {
  readonly delivery: WebhookDelivery;
  /** Newest first. */
  readonly attempts: readonly WebhookAttempt[];
}

/**
 * An app's webhook endpoints and their deliveries, managed with the app's API key or the admin token
 * (which must name the app when creating or listing). Another app's endpoint or delivery is reported as
 * absent (404); a customer session may not manage them (403).
 */
export class WebhooksService {
  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
    private readonly jobs: JobQueue,
    private readonly secrets: SecretBox,
    /** Production delivers to https URLs only. */
    private readonly httpsOnly: boolean,
    private readonly events: OutboundEvents,
  ) {}

  /** Creates an endpoint and its signing secret (returned this once). */
  async createEndpoint(principal: Principal, input: unknown): Promise<EndpointWithSecret> {
    const fields = parseInput(createEndpointSchema, input);
    const appId = await this.#appFor(principal, fields.appId);
    this.#checkScheme(fields.url);
    const secret = newSigningSecret();
    const now = this.clock.now();
    return this.orm.em.transactional(async (em) => {
      // Serializes creations for one app, so the limit holds under concurrency.
      await em.execute('select id from app where id = ? for update', [appId]);
      if ((await em.count(WebhookEndpoint, { app: appId })) >= MAX_ENDPOINTS_PER_APP) {
        throw new ConflictError(`An app can have at most ${MAX_ENDPOINTS_PER_APP} webhook endpoints`);
      }
      const endpoint = em.create(WebhookEndpoint, {
        id: newId('we'),
        app: em.getReference(App, appId),
        url: fields.url,
        events: fields.events ?? [],
        description: fields.description ?? null,
        enabled: true,
        secretCiphertext: this.secrets.seal(secret),
        createdAt: now,
        updatedAt: now,
      });
      return { endpoint, secret };
    });
  }

  /** Changes the URL, event types, description or enabled flag; fields left out keep their value. */
  async updateEndpoint(principal: Principal, id: unknown, input: unknown): Promise<WebhookEndpoint> {
    const patch = parseInput(updateEndpointSchema, input);
    if (patch.url !== undefined) this.#checkScheme(patch.url);
    return this.orm.em.transactional(async (em) => {
      const endpoint = await this.#endpointOrFail(em, principal, id);
      if (patch.url !== undefined) endpoint.url = patch.url;
      if (patch.events !== undefined) endpoint.events = patch.events ?? [];
      if (patch.description !== undefined) endpoint.description = patch.description;
      if (patch.enabled !== undefined) endpoint.enabled = patch.enabled;
      endpoint.updatedAt = this.clock.now();
      return endpoint;
    });
  }

  /** Deletes the endpoint with its deliveries; events still pending for it are not sent. */
  async deleteEndpoint(principal: Principal, id: unknown): Promise<WebhookEndpoint> {
    return this.orm.em.transactional(async (em) => {
      const endpoint = await this.#endpointOrFail(em, principal, id);
      em.remove(endpoint);
      return endpoint;
    });
  }

  /** A new signing secret (returned this once); the previous one keeps signing beside it for 24 h. */
  async rotateSecret(principal: Principal, id: unknown): Promise<EndpointWithSecret> {
    const secret = newSigningSecret();
    return this.orm.em.transactional(async (em) => {
      const endpoint = await this.#endpointOrFail(em, principal, id, true);
      const now = this.clock.now();
      endpoint.previousSecretCiphertext = endpoint.secretCiphertext;
      endpoint.previousSecretExpiresAt = new Date(now.getTime() + PREVIOUS_SECRET_GRACE_MS);
      endpoint.secretCiphertext = this.secrets.seal(secret);
      endpoint.updatedAt = now;
      return { endpoint, secret };
    });
  }

  /** One endpoint. */
  async getEndpoint(principal: Principal, id: unknown): Promise<WebhookEndpoint> {
    return this.#endpointOrFail(this.orm.em, principal, id);
  }

  /** The app's endpoints, oldest first; `appId` is required with the admin token. */
  async listEndpoints(principal: Principal, appId?: unknown): Promise<WebhookEndpoint[]> {
    const app = await this.#appFor(principal, appId);
    return this.orm.em.find(WebhookEndpoint, { app }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  }

  /** The endpoint's deliveries, newest first, each with its latest attempts. */
  async listDeliveries(
    principal: Principal,
    endpointId: unknown,
    query: unknown,
  ): Promise<DeliveryWithAttempts[]> {
    const { limit } = parseInput(listDeliveriesSchema, query ?? {});
    const em = this.orm.em;
    const endpoint = await this.#endpointOrFail(em, principal, endpointId);
    const deliveries = await em.find(
      WebhookDelivery,
      { endpoint },
      { orderBy: { createdAt: 'desc', id: 'desc' }, limit, populate: ['event'] },
    );
    return this.#withAttempts(em, deliveries);
  }

  /**
   * Sends a delivery again now, once, whatever became of it (a failed one, typically). A delivery still
   * being retried on its schedule → 409.
   */
  async retryDelivery(principal: Principal, id: unknown): Promise<DeliveryWithAttempts> {
    const deliveryId = parseInput(idSchema, id);
    const caller = this.#caller(principal);
    return this.orm.em.transactional(async (em) => {
      const delivery = await em.findOne(
        WebhookDelivery,
        { id: deliveryId, ...(caller.appId ? { event: { app: caller.appId } } : {}) },
        { populate: ['event'], lockMode: LockMode.PESSIMISTIC_WRITE },
      );
      if (!delivery) throw new NotFoundError('Webhook delivery', deliveryId);
      if (delivery.status === 'pending') {
        throw new ConflictError(
          'This delivery is still being attempted; retry it once it has succeeded or failed',
        );
      }
      const now = this.clock.now();
      delivery.status = 'pending';
      delivery.nextAttemptAt = now;
      delivery.updatedAt = now;
      await em.flush();
      await this.jobs.enqueue<DeliveryJob>(em, DELIVERY_QUEUE, [
        { data: { deliveryIds: [delivery.id], attempt: delivery.attempts, manual: true } },
      ]);
      const [result] = await this.#withAttempts(em, [delivery]);
      return result!;
    });
  }

  /**
   * Sends the endpoint a `webhook.test` event now, delivered like any other (signed, queued, retried on
   * failure), whatever event types it takes. A disabled endpoint → 409: it would not be sent.
   */
  async sendTestEvent(principal: Principal, id: unknown): Promise<DeliveryWithAttempts> {
    return this.orm.em.transactional(async (em) => {
      const endpoint = await this.#endpointOrFail(em, principal, id);
      if (!endpoint.enabled) {
        throw new ConflictError('This endpoint is disabled: enable it to send it a test event');
      }
      const deliveryId = await this.events.recordForEndpoint(
        em,
        endpoint.app.id,
        endpoint.id,
        'webhook.test',
        {
          endpointId: endpoint.id,
          message: 'A test event sent from Tollgate: a receiver answering 2xx is ready.',
        },
      );
      const delivery = await em.findOneOrFail(WebhookDelivery, { id: deliveryId }, { populate: ['event'] });
      return { delivery, attempts: [] };
    });
  }

  async #withAttempts(em: EntityManager, deliveries: WebhookDelivery[]): Promise<DeliveryWithAttempts[]> {
    if (deliveries.length === 0) return [];
    const attempts = await em.find(
      WebhookAttempt,
      { delivery: { $in: deliveries.map((d) => d.id) } },
      { orderBy: { attemptedAt: 'desc', id: 'desc' } },
    );
    return deliveries.map((delivery) => ({
      delivery,
      attempts: attempts.filter((a) => a.delivery.id === delivery.id).slice(0, ATTEMPTS_SHOWN),
    }));
  }

  /** The admin token may act on any app's endpoint; an API key on its own app's only. */
  #caller(principal: Principal): { appId: string | undefined } {
    if (principal.kind === 'admin') return { appId: undefined };
    return { appId: requireApiKey(principal).appId };
  }

  async #endpointOrFail(
    em: EntityManager,
    principal: Principal,
    id: unknown,
    withSecret = false,
  ): Promise<WebhookEndpoint> {
    const endpointId = parseInput(idSchema, id);
    const { appId } = this.#caller(principal);
    const endpoint = await em.findOne(
      WebhookEndpoint,
      { id: endpointId, ...(appId ? { app: appId } : {}) },
      withSecret ? { populate: ['secretCiphertext'] } : {},
    );
    if (!endpoint) throw new NotFoundError('Webhook endpoint', endpointId);
    return endpoint;
  }

  /** The app to act on: the API key's own, or the one the admin token names (which must exist). */
  async #appFor(principal: Principal, appId: unknown): Promise<string> {
    if (principal.kind === 'admin') {
      if (appId === undefined || appId === null)
        throw ValidationError.forField('appId', 'is required for the admin token');
      const app = parseInput(idSchema, appId);
      if (!(await this.orm.em.findOne(App, { id: app }))) throw new NotFoundError('App', app);
      return app;
    }
    const caller = requireApiKey(principal);
    // An app's key names its own app or none; another app is answered as if it did not exist.
    if (appId !== undefined && appId !== null && appId !== caller.appId) {
      throw new NotFoundError('App', String(appId));
    }
    return caller.appId;
  }

  #checkScheme(url: string): void {
    if (this.httpsOnly && new URL(url).protocol !== 'https:') {
      throw ValidationError.forField('url', 'must be an https URL');
    }
  }
}
