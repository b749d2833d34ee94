import { customerOrFail } from './customers.js';
import { invalid } from './errors.js';
import { DAY, now, randomId } from './objects.js';
import { allow, int, type Obj, obj, type Params, str } from './parameters.js';
import { type Emulation, findOrFail, listPage } from './state.js';

/**
 * Billing Meters (`/v1/billing/meters`) and meter events (`/v1/billing/meter_events`): usage reported
 * per customer, de-duplicated by `identifier` (a repeated identifier within 24 hours is counted once),
 * aggregated by the meter's formula over a period for the metered prices that name the meter.
 */

const FORMULAS = ['sum', 'count', 'last'];

export function createMeter(em: Emulation, params: Params): Obj {
  allow(params, [
    'display_name',
    'event_name',
    'default_aggregation',
    'customer_mapping',
    'value_settings',
    'event_time_window',
  ]);
  const displayName = str(params, 'display_name', true)!;
  const eventName = str(params, 'event_name', true)!;
  const aggregation = obj(params, 'default_aggregation');
  if (!aggregation) throw invalid('Missing required param: default_aggregation.', 'default_aggregation');
  const formula = str(aggregation, 'formula', true)!;
  if (!FORMULAS.includes(formula))
    throw invalid(
      `Invalid default_aggregation[formula]: must be one of ${FORMULAS.join(', ')}`,
      'default_aggregation[formula]',
    );
  const taken = Object.values(em.state.meters).some(
    (m) => m.event_name === eventName && m.status === 'active',
  );
  if (taken) throw invalid(`An active meter with event_name \`${eventName}\` already exists.`, 'event_name');
  const mapping = obj(params, 'customer_mapping') ?? {};
  const valueSettings = obj(params, 'value_settings') ?? {};
  const created = now();
  const meter: Obj = {
    id: randomId('mtr_', 24),
    object: 'billing.meter',
    created,
    customer_mapping: {
      event_payload_key: str(mapping, 'event_payload_key') ?? 'stripe_customer_id',
      type: 'by_id',
    },
    default_aggregation: { formula },
    display_name: displayName,
    event_name: eventName,
    event_time_window: str(params, 'event_time_window') ?? null,
    livemode: false,
    status: 'active',
    status_transitions: { deactivated_at: null },
    updated: created,
    value_settings: { event_payload_key: str(valueSettings, 'event_payload_key') ?? 'value' },
  };
  em.state.meters[meter.id] = meter;
  return meter;
}

export function meterOrFail(em: Emulation, id: string, param = 'id'): Obj {
  return findOrFail('billing.meter', em.state.meters, id, param);
}

export function listMeters(em: Emulation, params: Params): Obj {
  allow(params, ['status', 'limit', 'starting_after', 'ending_before']);
  const status = str(params, 'status');
  const items = Object.values(em.state.meters).filter((m) => status === undefined || m.status === status);
  return listPage('/v1/billing/meters', items, params);
}

/** `POST /v1/billing/meter_events`. */
export function createMeterEvent(em: Emulation, params: Params): Obj {
  allow(params, ['event_name', 'payload', 'identifier', 'timestamp']);
  const eventName = str(params, 'event_name', true)!;
  const payload = obj(params, 'payload');
  if (!payload) throw invalid('Missing required param: payload.', 'payload');
  const meter = Object.values(em.state.meters).find(
    (m) => m.event_name === eventName && m.status === 'active',
  );
  if (!meter) throw invalid(`No active meter was found with event_name \`${eventName}\`.`, 'event_name');
  const customerKey: string = meter.customer_mapping.event_payload_key;
  const valueKey: string = meter.value_settings.event_payload_key;
  const customerId = str(payload, customerKey);
  if (!customerId)
    throw invalid(`Missing required param: payload[${customerKey}].`, `payload[${customerKey}]`);
  customerOrFail(em, customerId, `payload[${customerKey}]`);
  const rawValue = payload[valueKey] ?? (meter.default_aggregation.formula === 'count' ? '1' : undefined);
  if (rawValue === undefined)
    throw invalid(`Missing required param: payload[${valueKey}].`, `payload[${valueKey}]`);
  if (typeof rawValue !== 'string' || !/^-?\d+(\.\d+)?$/.test(rawValue))
    throw invalid(`Invalid payload[${valueKey}]: must be a number`, `payload[${valueKey}]`);
  const at = now();
  const timestamp = int(params, 'timestamp') ?? at;
  if (timestamp < at - 35 * DAY || timestamp > at + 300)
    throw invalid(
      'Timestamp must be within the past 35 calendar days or up to 5 minutes in the future.',
      'timestamp',
    );
  const identifier = str(params, 'identifier') ?? randomId('', 24);
  const earlier = em.state.meterEvents[identifier];
  if (earlier && earlier.created > at - DAY) return earlier;
  const event: Obj = {
    object: 'billing.meter_event',
    created: at,
    event_name: eventName,
    identifier,
    livemode: false,
    payload: Object.fromEntries(Object.entries(payload).map(([k, v]) => [k, String(v)])),
    timestamp,
  };
  em.state.meterEvents[identifier] = event;
  return event;
}

/**
 * `POST /v1/billing/meter_event_adjustments`: cancels a meter event by its identifier, so no meter counts
 * it (Stripe allows this within 24 hours of the event). Cancelling a cancelled event changes nothing.
 */
export function createMeterEventAdjustment(em: Emulation, params: Params): Obj {
  allow(params, ['event_name', 'type', 'cancel']);
  const eventName = str(params, 'event_name', true)!;
  const type = str(params, 'type', true)!;
  if (type !== 'cancel') throw invalid('Invalid type: must be cancel', 'type');
  const cancel = obj(params, 'cancel');
  const identifier = cancel ? str(cancel, 'identifier') : undefined;
  if (!identifier) throw invalid('Missing required param: cancel[identifier].', 'cancel[identifier]');
  const event = em.state.meterEvents[identifier];
  if (!event || event.event_name !== eventName)
    throw invalid(
      `No meter event with identifier \`${identifier}\` was found for event_name \`${eventName}\`.`,
      'cancel[identifier]',
    );
  if (event.created <= now() - DAY)
    throw invalid(
      'A meter event can only be cancelled within 24 hours of its creation.',
      'cancel[identifier]',
    );
  em.state.cancelledMeterEvents[identifier] ??= { identifier, cancelled_at: now() };
  return {
    object: 'billing.meter_event_adjustment',
    cancel: { identifier },
    event_name: eventName,
    livemode: false,
    status: 'complete',
    type: 'cancel',
  };
}

/** A meter's events for a customer over `[start, end)` (event timestamps), oldest first; cancelled ones left out. */
export function meterEventsFor(
  em: Emulation,
  meterId: string,
  customerId: string,
  start: number,
  end: number,
): Obj[] {
  const meter = em.state.meters[meterId];
  if (!meter) return [];
  return Object.values(em.state.meterEvents)
    .filter(
      (e) =>
        e.event_name === meter.event_name &&
        e.payload[meter.customer_mapping.event_payload_key] === customerId &&
        e.timestamp >= start &&
        e.timestamp < end &&
        em.state.cancelledMeterEvents[e.identifier] === undefined,
    )
    .sort((a, b) => a.timestamp - b.timestamp || a.created - b.created);
}

/** The meter's formula (sum, count or last value) over its events. */
export function aggregate(em: Emulation, meterId: string, events: readonly Obj[]): number {
  const meter = em.state.meters[meterId];
  if (!meter) return 0;
  const values = events.map((e) => Number(e.payload[meter.value_settings.event_payload_key] ?? 1));
  const formula = meter.default_aggregation.formula;
  if (formula === 'count') return values.length;
  if (formula === 'last') return values.at(-1) ?? 0;
  return values.reduce((sum, v) => sum + v, 0);
}

/** `GET /v1/billing/meters/:id/event_summaries`: one summary for the whole range asked. */
export function listMeterEventSummaries(em: Emulation, meterId: string, params: Params): Obj {
  allow(params, [
    'customer',
    'start_time',
    'end_time',
    'value_grouping_window',
    'limit',
    'starting_after',
    'ending_before',
  ]);
  const meter = meterOrFail(em, meterId);
  const customer = customerOrFail(em, str(params, 'customer', true)!, 'customer').id;
  const start = int(params, 'start_time', true)!;
  const end = int(params, 'end_time', true)!;
  if (end <= start) throw invalid('end_time must be after start_time.', 'end_time');
  const summary = {
    id: randomId('mtrusg_', 24),
    object: 'billing.meter_event_summary',
    aggregated_value: aggregate(em, meter.id, meterEventsFor(em, meter.id, customer, start, end)),
    end_time: end,
    livemode: false,
    meter: meter.id,
    start_time: start,
  };
  return {
    object: 'list',
    data: [summary],
    has_more: false,
    url: `/v1/billing/meters/${meter.id}/event_summaries`,
  };
}
