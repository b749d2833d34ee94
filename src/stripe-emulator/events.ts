import { now, randomId } from './objects.js';
import type { Obj, Params } from './parameters.js';
import { type Emulation, findOrFail, listPage } from './state.js';

/** Stripe's API version the emulated objects follow: the one of the `stripe` SDK in use. */
export const EMULATOR_API_VERSION = '2026-10-28.endive';

/** `/v1/events`: every change the emulator makes, also sent as a webhook when a target is set. */

/** An event in Stripe's shape; `data.object` is a copy, so later changes do not rewrite history. */
export function newEvent(type: string, object: Obj, previous: Obj | undefined, pendingWebhooks: number): Obj {
  return {
    id: randomId('evt_'),
    object: 'event',
    api_version: EMULATOR_API_VERSION,
    created: now(),
    data: { object: structuredClone(object), ...(previous ? { previous_attributes: previous } : {}) },
    livemode: false,
    pending_webhooks: pendingWebhooks,
    request: { id: null, idempotency_key: null },
    type,
  };
}

export function listEvents(em: Emulation, params: Params): Obj {
  return listPage('/v1/events', Object.values(em.state.events), params);
}

export function eventOrFail(em: Emulation, id: string): Obj {
  return findOrFail('event', em.state.events, id);
}
