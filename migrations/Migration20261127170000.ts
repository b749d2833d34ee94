import { Migration } from '@mikro-orm/migrations';

/**
 * `tollgate_apply_provider_events(p_events jsonb)`: the Stripe receiver's first statement for several
 * notifications at once (src/modules/subscriptions/provider-event-batches.ts). Each element is the
 * argument list of `tollgate_apply_provider_event`, applied in order in one transaction; it answers one
 * row per element (`n` from 1), with that function's `outcome` and `pending`.
 *
 * A lock wait over 50 ms fails the whole call (`lock_timeout`, the transaction rolls back): the batch is
 * then made one notification at a time, each waiting as long as it must without holding up the others.
 */
export const APPLY_PROVIDER_EVENTS_FUNCTION_SQL = `create or replace function tollgate_apply_provider_events(p_events jsonb)
returns table (n int, outcome text, pending json)
language plpgsql
set plan_cache_mode = force_generic_plan
set lock_timeout = '50ms'
as $fn$
declare
  e jsonb;
  r record;
begin
  n := 0;
  for e in select value from jsonb_array_elements(p_events) loop
    n := n + 1;
    select * into r from tollgate_apply_provider_event(
      e->>0, (e->>1)::bigint, e->>2, e->>3, e->>4, array(select jsonb_array_elements_text(e->5)), e->>6,
      e->>7, (e->>8)::timestamptz, (e->>9)::boolean, (e->>10)::timestamptz, (e->>11)::timestamptz);
    outcome := r.outcome;
    pending := r.pending;
    return next;
  end loop;
end
$fn$`;

export class Migration20261127170000 extends Migration {
  override name = 'Migration20261127170000';

  override up(): void | Promise<void> {
    this.addSql(APPLY_PROVIDER_EVENTS_FUNCTION_SQL);
  }

  override down(): void | Promise<void> {
    this.addSql('drop function if exists tollgate_apply_provider_events;');
  }
}
