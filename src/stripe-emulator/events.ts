import { invalid } from './errors.js';
import { now, randomId } from './objects.js';
import { allow, arr, type Obj, type Params, str } from './parameters.js';
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

/** `GET /v1/events`: `type` may end in `*` (`customer.subscription.*`); `types` is a list of exact types. */
export function listEvents(em: Emulation, params: Params): Obj {
  allow(params, ['type', 'types', 'created', 'delivery_success', 'limit', 'starting_after', 'ending_before']);
  const type = str(params, 'type');
  const types = params.types === undefined ? undefined : arr(params, 'types').map(String);
  if (type !== undefined && types !== undefined)
    throw invalid('You may only specify one of these parameters: type, types.', 'types');
  const typeMatches = (t: string) =>
    type === undefined || (type.endsWith('*') ? t.startsWith(type.slice(0, -1)) : t === type);
  const items = Object.values(em.state.events).filter(
    (e) => typeMatches(e.type) && (types === undefined || types.includes(e.type)),
  );
  return listPage('/v1/events', items, params);
}

export function eventOrFail(em: Emulation, id: string): Obj {
  return findOrFail('event', em.state.events, id);
}
