import { Migration } from '@mikro-orm/migrations';
import { Migration20261126150000 } from './Migration20261126150000.js';

/**
 * `tollgate_consume` locks an existing period allowance with `select … for update` instead of an upsert
 * that rewrote it unchanged (`do update set spent = spent`): each consumption wrote the allowance row
 * twice, once to lock it and once to count. A missing allowance is still created in the same statement,
 * and a consumption racing another that creates it waits for that one, then locks the row. Signature,
 * results and burn-down are unchanged.
 */
export class Migration20261127100000 extends Migration {
  override name = 'Migration20261127100000';

  override up(): void {
    this.addSql(`create or replace function tollgate_consume(
  p_allowance_id text, p_rollover_id text, p_usage_id text,
  p_app_id text, p_subject_id text, p_bucket_customer_id text, p_customer_id text, p_organization_id text,
  p_feature text, p_limit bigint, p_amount bigint,
  p_period_start timestamptz, p_period_end timestamptz, p_expires_at timestamptz,
  p_rollover_max bigint, p_previous_start timestamptz, p_previous_end timestamptz,
  p_metadata jsonb, p_now timestamptz, p_stop_before_zero boolean, p_overage_price text,
  out outcome text, out allowance_id text, out granted bigint, out used bigint, out remaining bigint,
  out overage bigint)
language plpgsql as $fn$
#variable_conflict use_column
declare
  created boolean;
  bucket record;
  available bigint;
  take bigint;
  to_take bigint := p_amount;
  allowance_take bigint := 0;
  grant_ids text[] := '{}';
  grant_takes bigint[] := '{}';
  sources jsonb := '[]';
begin
  -- Locks the period's allowance, or creates it: every consumption of the subject's feature passes here
  -- first, so this row serializes them, on every instance, until the commit. An existing row is only
  -- locked (its one new version is the update below); a row another consumption is creating is waited
  -- for, then locked.
  created := false;
  select b.id into allowance_id from credit_bucket b
   where b.subject_id = p_subject_id and b.feature = p_feature and b.kind = 'allowance'
     and b.period_end = p_period_end
     for update;
  if not found then
    insert into credit_bucket
      (id, app_id, subject_id, customer_id, organization_id, feature, kind, priority, period_end, expires_at,
       created_at)
    values (p_allowance_id, p_app_id, p_subject_id, p_bucket_customer_id, p_organization_id, p_feature,
            'allowance', 50, p_period_end, p_expires_at, p_period_start)
    on conflict (subject_id, feature, kind, period_end) do nothing
    returning id into allowance_id;
    created := found;
    if not created then
      select b.id into allowance_id from credit_bucket b
       where b.subject_id = p_subject_id and b.feature = p_feature and b.kind = 'allowance'
         and b.period_end = p_period_end
         for update;
    end if;
  end if;

  -- A new period starts with the previous period's unspent allowance under the current limit, at most
  -- rollover.max, when the subject existed then.
  if created and p_rollover_max is not null and p_previous_end is not null then
    insert into credit_bucket
      (id, app_id, subject_id, customer_id, organization_id, feature, kind, amount, priority, period_end,
       expires_at, created_at)
    select p_rollover_id, p_app_id, p_subject_id, p_bucket_customer_id, p_organization_id, p_feature,
           'rollover',
           least(p_rollover_max, greatest(0, p_limit - coalesce((
             select p.spent from credit_bucket p
              where p.subject_id = p_subject_id and p.feature = p_feature and p.kind = 'allowance'
                and p.period_end = p_previous_end), 0)))
           * (case when exists (select 1 from customer c where c.id = p_subject_id and c.created_at < p_previous_end)
                     or exists (select 1 from organization o where o.id = p_subject_id and o.created_at < p_previous_end)
                   then 1 else 0 end),
           50, p_period_end, p_expires_at, p_previous_start
    on conflict (subject_id, feature, kind, period_end) do nothing;
  end if;

  granted := 0;
  used := 0;
  remaining := 0;
  overage := 0;
  for bucket in
    select b.id, b.kind, b.amount, b.spent, b.used, b.overage from credit_bucket b
     where b.subject_id = p_subject_id and b.feature = p_feature
       and ((b.kind = 'grant' and b.voided_at is null and (b.expires_at is null or b.expires_at > p_now))
         or (b.kind <> 'grant' and b.period_end = p_period_end))
     order by b.priority asc, b.expires_at asc nulls last, b.created_at asc, b.id asc
     for update
  loop
    -- An allowance holds the plan's current limit less what it paid.
    available := greatest(0, (case when bucket.kind = 'allowance' then p_limit else bucket.amount end) - bucket.spent);
    remaining := remaining + available;
    if bucket.kind = 'allowance' then
      used := bucket.used;
      overage := bucket.overage;
    else
      granted := granted + bucket.amount;
    end if;
    take := least(to_take, available);
    if take > 0 then
      to_take := to_take - take;
      sources := sources || jsonb_build_object('bucket', bucket.id, 'amount', take);
      if bucket.id = allowance_id then
        allowance_take := take;
      else
        grant_ids := grant_ids || bucket.id;
        grant_takes := grant_takes || take;
      end if;
    end if;
  end loop;

  if remaining < p_amount and p_overage_price is null then
    outcome := 'refused';
    return;
  end if;
  -- Stops before a consumption that empties a balance holding something (exactly, or past it with
  -- overage); one of a balance already at 0 is recorded at once.
  if p_stop_before_zero and remaining <= p_amount and (remaining > 0 or p_amount = 0) then
    outcome := 'reaches_zero';
    return;
  end if;

  -- What the buckets could not pay is overage, counted on the allowance (to_take is 0 without overage).
  update credit_bucket set spent = spent + allowance_take, used = used + p_amount, overage = overage + to_take
   where id = allowance_id;
  if cardinality(grant_ids) > 0 then
    update credit_bucket b set spent = b.spent + v.take
      from unnest(grant_ids, grant_takes) as v(id, take)
     where b.id = v.id;
  end if;
  insert into usage_record
    (id, app_id, subject_id, customer_id, organization_id, feature, amount, period_end, sources, metadata, created_at,
     overage, overage_price_id)
  values (p_usage_id, p_app_id, p_subject_id, p_customer_id, p_organization_id, p_feature, p_amount,
          p_period_end, sources, p_metadata, p_now, to_take, case when to_take > 0 then p_overage_price end);
  outcome := 'recorded';
end
$fn$;`);
  }

  override async down(): Promise<void> {
    // The function as it was before.
    const before = new Migration20261126150000(this.driver, this.config);
    await before.up();
    for (const sql of before.getQueries()) {
      if (typeof sql === 'string' && sql.startsWith('create or replace function tollgate_consume(')) this.addSql(sql);
    }
  }
}
