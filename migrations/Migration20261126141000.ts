import { Migration } from '@mikro-orm/migrations';

/**
 * The metered consumption as one database function, so a consumption is one statement: one round trip,
 * and the subject's allowance row stays locked only while the function runs and commits (a hot subject's
 * consumptions queue on it for that long, not for four client round trips).
 *
 * This is the one place of the burn-down rule: buckets pay in order of priority (lower first), then
 * earliest expiry (no expiry last), then creation time, then id. A period's allowance is created at the
 * period's start and a rollover at the previous period's start, so with equal priority the rollover, which
 * came first, pays before the allowance. A change to the rule is a new migration that replaces the function.
 *
 * In PL/pgSQL each statement of a volatile function reads a fresh snapshot (read committed), so after the
 * first statement has waited for the allowance row's lock, the buckets are read as the previous
 * consumption committed them.
 *
 * Outcomes: `refused` (the balance is short; nothing taken), `reaches_zero` (only with
 * `p_stop_before_zero`: the consumption would empty the balance, nothing taken, so that the caller can
 * make it again in a transaction that also records its event), `recorded`. `granted`, `used` and
 * `remaining` are the balance before the consumption.
 */
export class Migration20261126141000 extends Migration {
  override name = 'Migration20261126141000';

  override up(): void | Promise<void> {
    this.addSql(`create or replace function tollgate_consume(
  p_allowance_id text, p_rollover_id text, p_usage_id text,
  p_app_id text, p_subject_id text, p_bucket_customer_id text, p_customer_id text, p_organization_id text,
  p_feature text, p_limit bigint, p_amount bigint,
  p_period_start timestamptz, p_period_end timestamptz, p_expires_at timestamptz,
  p_rollover_max bigint, p_previous_start timestamptz, p_previous_end timestamptz,
  p_metadata jsonb, p_now timestamptz, p_stop_before_zero boolean,
  out outcome text, out allowance_id text, out granted bigint, out used bigint, out remaining bigint)
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
  -- Creates the period's allowance or locks it: every consumption of the subject's feature passes here
  -- first, so this row serializes them, on every instance, until the commit.
  insert into credit_bucket as b
    (id, app_id, subject_id, customer_id, organization_id, feature, kind, priority, period_end, expires_at, created_at)
  values (p_allowance_id, p_app_id, p_subject_id, p_bucket_customer_id, p_organization_id, p_feature,
          'allowance', 50, p_period_end, p_expires_at, p_period_start)
  on conflict (subject_id, feature, kind, period_end) do update set spent = b.spent
  returning b.id, (xmax = 0) into allowance_id, created;

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
  for bucket in
    select b.id, b.kind, b.amount, b.spent, b.used from credit_bucket b
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

  if remaining < p_amount then
    outcome := 'refused';
    return;
  end if;
  if p_stop_before_zero and remaining = p_amount then
    outcome := 'reaches_zero';
    return;
  end if;

  update credit_bucket set spent = spent + allowance_take, used = used + p_amount where id = allowance_id;
  if cardinality(grant_ids) > 0 then
    update credit_bucket b set spent = b.spent + v.take
      from unnest(grant_ids, grant_takes) as v(id, take)
     where b.id = v.id;
  end if;
  insert into usage_record
    (id, app_id, subject_id, customer_id, organization_id, feature, amount, period_end, sources, metadata, created_at)
  values (p_usage_id, p_app_id, p_subject_id, p_customer_id, p_organization_id, p_feature, p_amount,
          p_period_end, sources, p_metadata, p_now);
  outcome := 'recorded';
end
$fn$;`);
  }

  override down(): void | Promise<void> {
    this.addSql('drop function if exists tollgate_consume;');
  }
}
