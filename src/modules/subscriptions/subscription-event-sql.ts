/**
 * The outbound events of a subscription change, rendered in SQL: the same bodies, byte for byte, that
 * `SubscriptionEvents` (subscription-events.ts) renders in JavaScript with `presentSubscriptionRow` and
 * `OutboundEvents.prepare`. The Stripe receiver's function uses them to make a change and its events in
 * the one call that reads the row (provider-event-function.ts), where the JavaScript rules would need a
 * second call. test/integration/subscription-event-sql.test.ts renders changes both ways and compares
 * the bytes, so a change of the Subscription object or of the rules that choose the events must be made
 * in both places.
 *
 * Every helper answers an SQL expression of type `text` holding JSON as `JSON.stringify` writes it.
 */

/** The name of the function that writes a `jsonb` value as `JSON.stringify` writes it once parsed. */
export const JSON_TEXT_FUNCTION = 'tollgate_json_text';

/** Whether a key is one JavaScript orders first, as an array index: 0 to 2³² − 2, written canonically. */
const ARRAY_INDEX = (key: string) => `(${key} ~ '^(0|[1-9][0-9]{0,9})$' and ${key}::bigint <= 4294967294)`;

/**
 * `create or replace function tollgate_json_text(jsonb)`: compact JSON, keys in the order a JavaScript
 * object takes them from the value's text (array-index keys first, ascending; then the others in the
 * order `jsonb` keeps them, which is the order of its text), strings escaped as both escape them.
 * Numbers lose trailing zeros of their fraction (`1.50` → `1.5`); one with more digits than a double
 * holds, of 1e21 or more, or under 1e-6 in size, is written as PostgreSQL writes it, where JavaScript
 * would round it or use an exponent (the value is the same JSON number either way).
 *
 * PL/pgSQL rather than SQL: PostgreSQL (before 18) plans a call of an SQL function it cannot inline anew
 * each time, and a recursive one is never inlined. As an SQL function it cost some 200 µs a call, more
 * than the rest of a change with its events.
 */
export function jsonTextFunctionSql(): string {
  return `create or replace function ${JSON_TEXT_FUNCTION}(p_value jsonb) returns text
language plpgsql
immutable
as $fn$
begin
  case jsonb_typeof(p_value)
    when 'object' then
      if p_value = '{}'::jsonb then return '{}'; end if;
      return '{' || (
        select string_agg(to_json(e.key)::text || ':' || ${JSON_TEXT_FUNCTION}(e.value), ','
                          order by ${ARRAY_INDEX('e.key')} desc, case when ${ARRAY_INDEX('e.key')} then e.key::bigint end, e.n)
          from jsonb_each(p_value) with ordinality as e(key, value, n)) || '}';
    when 'array' then
      if p_value = '[]'::jsonb then return '[]'; end if;
      return '[' || (
        select string_agg(${JSON_TEXT_FUNCTION}(a.value), ',' order by a.n)
          from jsonb_array_elements(p_value) with ordinality as a(value, n)) || ']';
    when 'number' then return trim_scale(p_value::text::numeric)::text;
    else return p_value::text;
  end case;
end
$fn$`;
}

/** A `text` value (or null) as a JSON string (or `null`). */
export function jsonStringSql(value: string): string {
  return `coalesce(to_json(${value}::text)::text, 'null')`;
}

/** A `timestamptz` (or null) as `Date.prototype.toISOString` writes it, a JSON string (or `null`). */
export function jsonTimeSql(value: string): string {
  return jsonStringSql(`to_char(${value} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`);
}

/** A non-null `boolean` as JSON. */
function jsonBooleanSql(value: string): string {
  return `case when ${value} then 'true' else 'false' end`;
}

/** The columns of a subscription the Subscription object shows, as SQL expressions. */
export interface SubscriptionViewSql {
  readonly id: string;
  readonly customerId: string;
  readonly organizationId: string;
  readonly planSlug: string;
  readonly planName: string;
  readonly status: string;
  readonly currentPeriodEnd: string;
  readonly cancelAtPeriodEnd: string;
  readonly trialEnd: string;
  readonly canceledAt: string;
  readonly metadata: string;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** The Subscription object of the REST API, as `presentSubscriptionRow` gives it and `JSON.stringify` writes it. */
export function subscriptionViewSql(v: SubscriptionViewSql): string {
  return `'{"id":' || ${jsonStringSql(v.id)}
    || ',"customerId":' || ${jsonStringSql(v.customerId)}
    || ',"organizationId":' || ${jsonStringSql(v.organizationId)}
    || ',"plan":{"id":' || ${jsonStringSql(v.planSlug)} || ',"name":' || ${jsonStringSql(v.planName)} || '}'
    || ',"status":' || ${jsonStringSql(v.status)}
    || ',"currentPeriodEnd":' || ${jsonTimeSql(v.currentPeriodEnd)}
    || ',"cancelAtPeriodEnd":' || ${jsonBooleanSql(v.cancelAtPeriodEnd)}
    || ',"trialEnd":' || ${jsonTimeSql(v.trialEnd)}
    || ',"canceledAt":' || ${jsonTimeSql(v.canceledAt)}
    || ',"metadata":' || ${JSON_TEXT_FUNCTION}(coalesce(${v.metadata}, '{}'::jsonb))
    || ',"createdAt":' || ${jsonTimeSql(v.createdAt)}
    || ',"updatedAt":' || ${jsonTimeSql(v.updatedAt)} || '}'`;
}

/**
 * What of the Subscription object a change can alter, compared the way the object shows it (times to the
 * millisecond): `subscription.updated` is recorded when this differs before and after.
 */
export function subscriptionViewChangedSql(before: SubscriptionViewSql, after: SubscriptionViewSql): string {
  const shown = (v: SubscriptionViewSql) =>
    `(${v.planSlug}, ${v.planName}, ${v.status}, ${jsonTimeSql(v.currentPeriodEnd)}, ${v.cancelAtPeriodEnd},
      ${jsonTimeSql(v.trialEnd)}, ${jsonTimeSql(v.canceledAt)})`;
  return `${shown(before)} is distinct from ${shown(after)}`;
}

/**
 * An event's body, `{"type":…,"timestamp":…,"data":…}`, as `OutboundEvents.prepare` writes it; `data`
 * is JSON text.
 */
export function eventBodySql(type: string, at: string, data: string): string {
  return `'{"type":' || ${jsonStringSql(type)} || ',"timestamp":' || ${jsonTimeSql(at)} || ',"data":' || ${data} || '}'`;
}

/**
 * The `data` of `entitlements.updated` (`entitlementsEvent`): the owner (organization, else customer),
 * the plan's name and its features as entitlements show them (a metered feature as its limit), and `ev`.
 * `entitled` is a `jsonb` `{"name", "features"}` or null (no plan).
 */
export function entitlementsDataSql(
  customerId: string,
  organizationId: string,
  entitled: string,
  ev: string,
): string {
  return `case when ${organizationId} is not null then '{"organizationId":' || ${jsonStringSql(organizationId)}
               else '{"customerId":' || ${jsonStringSql(customerId)} end
    || ',"planName":' || ${jsonStringSql(`${entitled}->>'name'`)}
    || ',"features":' || ${JSON_TEXT_FUNCTION}(coalesce((
         select jsonb_object_agg(f.key, case when jsonb_typeof(f.value) = 'object'
                                               and jsonb_exists(f.value, 'limit') and jsonb_exists(f.value, 'reset')
                                             then f.value->'limit' else f.value end)
           from jsonb_each(${entitled}->'features') as f), '{}'::jsonb))
    || ',"ev":' || ${ev}::text || '}'`;
}

/** An event's subjects, `[…]` sorted and without repeats, as `OutboundEvents.prepare` writes them. */
export function subjectsSql(...ids: string[]): string {
  return `coalesce((select '[' || string_agg(to_json(s.id)::text, ',' order by s.id collate "C") || ']'
             from (select distinct x.id from unnest(array[${ids.join(', ')}]::text[]) as x(id)
                    where x.id is not null) s), '[]')`;
}
