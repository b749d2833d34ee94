import type { MikroORM } from '@mikro-orm/postgresql';
import type pg from 'pg';
import type { Clock } from '../../core/clock.js';
import { ConflictError, NotFoundError, ValidationError } from '../../core/errors.js';
import { type AppScope, type Principal, requireApiKey, requireAppPrincipal } from '../../core/principal.js';
import { parseInput } from '../../core/validation.js';
import { withPooledClient } from '../../infra/prepared-statement.js';
import { actingOnApp } from '../apps/app-rules.js';
import { appendAuditEvent } from '../audit/audit-record.js';
import { assertMetadataLimits } from '../customers/customers.schemas.js';
import type { EntitlementsService } from '../entitlements/entitlements.service.js';
import { type BillingContext, billingContextOf } from '../subscriptions/billing-context.js';
import type { OutboundEvents } from '../webhooks/outbound-events.js';
import { type BalanceReader, meterOf, subjectOf } from './balance-reader.js';
import {
  type Balance,
  type Consumption,
  type CreditGrant,
  ledger,
  type Meter,
  type Subject,
} from './ledger.js';
import { presentBalance, presentGrant, type UsageResult } from './metering.presenter.js';
import {
  grantIdSchema,
  grantInputSchema,
  subjectQuery,
  usageIdSchema,
  usageInputSchema,
} from './metering.schemas.js';
import type { OverageReporter } from './overage-reporter.js';

/**
 * Metered features: atomic check-and-consume, refunds, grants and balances of a customer or an
 * organization. A session may consume in its own context and read its balances; grants, voids and
 * refunds need an API key of the app (or the admin token naming it, in GraphQL).
 */
export class MeteringService {
  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
    private readonly entitlements: EntitlementsService,
    private readonly balances: BalanceReader,
    private readonly events: OutboundEvents,
    /** The `pg` pool under the ORM, for the consumption's fast path. */
    private readonly pool: () => Promise<pg.Pool>,
    private readonly overage: OverageReporter,
  ) {}

  #pool: Promise<pg.Pool> | undefined;

  /**
   * `POST /v1/usage`: takes `amount` of `feature` from the context's balance in one transaction, or
   * nothing when the balance is short (`allowed: false`). A feature the plan lacks answers
   * `allowed: false`; a feature the plan has but does not meter → 400.
   */
  async recordUsage(principal: Principal, input: unknown, scope?: AppScope): Promise<UsageResult> {
    const acting = await actingOnApp(this.orm.em, principal, scope);
    const caller = requireAppPrincipal(acting);
    if (caller.kind === 'session') rejectSubjectFields(input);
    const context = await billingContextOf(
      this.orm,
      acting,
      caller.kind === 'session' ? {} : subjectQuery(input),
    );
    const { feature, amount, metadata } = parseInput(usageInputSchema, withoutSubject(input));
    assertMetadataLimits(metadata);
    const state = await this.entitlements.resolveState(context);
    const now = this.clock.now();
    const meter = meterOf(state, feature, now);
    if (meter === null) {
      if (Object.hasOwn(state.entitlements.features, feature)) {
        throw ValidationError.forField('feature', `${feature} is not a metered feature of the plan`);
      }
      return { allowed: false, balance: null };
    }
    const subject = subjectOf(context, caller.kind === 'session' ? caller : undefined);
    // The fast path: the consumption is one statement, its own transaction, on a pooled connection
    // (without the ORM's transaction machinery). One that would bring the balance to 0 takes nothing
    // there and is made again below, in the ORM's transaction, so its `usage.limit_reached` event commits
    // with it (at most once a period per subject and feature, unless refunds or grants refill the balance).
    const fast = await this.#consumeOnPool(subject, meter, amount, metadata, now);
    if (fast.allowed !== 'reaches_zero') return this.#reported(fast, subject, meter.feature, amount);
    const consumed = await this.orm.em.transactional(async (em) => {
      const consumed = await ledger.consume(em, subject, meter, amount, metadata, now);
      // The first consumption that brings the balance to 0 (with overage, one may go past it).
      const emptied = consumed.allowed === true && consumed.before.remaining > 0;
      if (consumed.allowed === true && consumed.balance.remaining === 0 && (emptied || amount === 0)) {
        const whose = {
          customerId: context.customerId ?? null,
          organizationId: context.organizationId ?? null,
        };
        const data = { ...whose, feature, ...presentBalance(consumed.balance) };
        await this.events.record(em, context.appId, 'usage.limit_reached', data, subjectIdsOf(whose));
      }
      return consumed;
    });
    return this.#reported(consumed, subject, feature, amount);
  }

  /**
   * The answer to a committed consumption. Its overage, if any, is announced to the reporter first, and
   * the changed balance to every instance's balance cache.
   */
  async #reported(
    consumed: Consumption | { readonly allowed: 'reaches_zero' },
    subject: Subject,
    feature: string,
    amount: number,
  ): Promise<UsageResult> {
    if (consumed.allowed === true) {
      if (consumed.overage > 0) await this.overage.announce(consumed.usageId);
      await this.balances.changed(subject.subjectId);
    }
    return resultOf(consumed, feature, amount);
  }

  /** One consumption as a statement of its own on a pooled connection, stopping before 0. */
  async #consumeOnPool(
    subject: Subject,
    meter: Meter,
    amount: number,
    metadata: object,
    now: Date,
  ): Promise<Consumption | { readonly allowed: 'reaches_zero' }> {
    this.#pool ??= this.pool();
    return withPooledClient(await this.#pool, (client) =>
      ledger.consume(client, subject, meter, amount, metadata, now, true),
    );
  }

  /** `POST /v1/usage/:id/refund`: gives a usage back to the buckets that paid it, once (again → 409). */
  async refundUsage(principal: Principal, rawId: unknown, scope?: AppScope): Promise<Balance> {
    const caller = requireApiKey(await actingOnApp(this.orm.em, principal, scope));
    const id = parseInput(usageIdSchema, rawId);
    const now = this.clock.now();
    const refunded = await this.orm.em.transactional((em) => ledger.refund(em, caller.appId, id, now));
    if (refunded.result === 'missing') throw new NotFoundError('Usage', id);
    if (refunded.result === 'refunded') throw new ConflictError(`Usage ${id} has already been refunded`);
    await this.balances.changed(refunded.subjectId);
    // A refunded overage is not billed: its meter event is cancelled (or never counted).
    if (refunded.overage > 0) await this.overage.announce(id);
    const context = await this.#contextOfSubject(caller.appId, refunded.subjectId);
    const state = await this.entitlements.resolveState(context);
    return (
      (await this.balances.one(context, state, refunded.feature)) ?? {
        feature: refunded.feature,
        limit: 0,
        granted: 0,
        used: 0,
        remaining: 0,
        overage: 0,
        resetsAt: null,
      }
    );
  }

  /** `POST /v1/credit-grants`: adds units of a feature to a customer's or organization's balance. */
  async createGrant(principal: Principal, input: unknown, scope?: AppScope): Promise<CreditGrant> {
    const acting = await actingOnApp(this.orm.em, principal, scope);
    requireApiKey(acting);
    const context = await billingContextOf(this.orm, acting, subjectQuery(input));
    const grant = parseInput(grantInputSchema, withoutSubject(input));
    const now = this.clock.now();
    return this.orm.em.transactional(async (em) => {
      const created = await ledger.createGrant(em, subjectOf(context), grant, now);
      // The ledger writes by SQL of its own: the unit of work does not see the grant to audit it.
      appendAuditEvent(
        em,
        {
          action: 'grant.create',
          targetId: created.id,
          appId: context.appId,
          customerId: created.customerId,
          changes: Object.fromEntries(
            (
              [
                'customerId',
                'organizationId',
                'feature',
                'amount',
                'priority',
                'expiresAt',
                'description',
              ] as const
            ).map((field) => {
              const value = created[field];
              return [field, { before: null, after: value instanceof Date ? value.toISOString() : value }];
            }),
          ),
        },
        now,
      );
      await this.events.record(
        em,
        context.appId,
        'credit_grant.created',
        presentGrant(created),
        subjectIdsOf(created),
      );
      return created;
    });
  }

  /** `POST /v1/credit-grants/:id/void`: the grant's unspent part stops paying (again → 409). */
  async voidGrant(principal: Principal, rawId: unknown, scope?: AppScope): Promise<CreditGrant> {
    const caller = requireApiKey(await actingOnApp(this.orm.em, principal, scope));
    const id = parseInput(grantIdSchema, rawId);
    const now = this.clock.now();
    return this.orm.em.transactional(async (em) => {
      const voided = await ledger.voidGrant(em, caller.appId, id, now);
      if (voided.result === 'missing') throw new NotFoundError('Credit grant', id);
      if (voided.result === 'voided') throw new ConflictError(`Credit grant ${id} has already been voided`);
      appendAuditEvent(
        em,
        {
          action: 'grant.void',
          targetId: id,
          appId: caller.appId,
          customerId: voided.grant.customerId,
          changes: { voidedAt: { before: null, after: voided.grant.voidedAt?.toISOString() ?? null } },
        },
        now,
      );
      await this.events.record(
        em,
        caller.appId,
        'credit_grant.voided',
        presentGrant(voided.grant),
        subjectIdsOf(voided.grant),
      );
      return voided.grant;
    });
  }

  /** `GET /v1/credit-grants?customerId=…`: a subject's grants, newest first. */
  async listGrants(principal: Principal, query: unknown, scope?: AppScope): Promise<CreditGrant[]> {
    const acting = await actingOnApp(this.orm.em, principal, scope);
    requireApiKey(acting);
    const context = await billingContextOf(this.orm, acting, query);
    return ledger.listGrants(this.orm.em, subjectOf(context).subjectId, this.clock.now());
  }

  /** `GET /v1/balances`: every metered feature's live balance in the context. */
  async getBalances(principal: Principal, query: unknown, scope?: AppScope): Promise<readonly Balance[]> {
    const context = await billingContextOf(this.orm, await actingOnApp(this.orm.em, principal, scope), query);
    return this.balances.all(context, await this.entitlements.resolveState(context));
  }

  /** The context of a subject id known to be the app's (from its own rows). */
  async #contextOfSubject(appId: string, subjectId: string): Promise<BillingContext> {
    const rows = await this.orm.em.getConnection().execute<{ kind: string }[]>(
      `select 'customer' as kind from customer where id = ? and app_id = ?
         union all select 'organization' from organization where id = ? and app_id = ?`,
      [subjectId, appId, subjectId, appId],
    );
    if (rows[0]?.kind === 'organization') return { appId, organizationId: subjectId };
    return { appId, customerId: subjectId };
  }
}

/** A consumption as `POST /v1/usage` answers it. */
function resultOf(
  consumed: Consumption | { readonly allowed: 'reaches_zero' },
  feature: string,
  amount: number,
): UsageResult {
  if (consumed.allowed === 'reaches_zero')
    throw new Error('a consumption in a transaction never stops before 0');
  return consumed.allowed
    ? { allowed: true, id: consumed.usageId, feature, amount, balance: consumed.balance }
    : { allowed: false, balance: consumed.balance };
}

/** A session consumes and reads in its own context: naming a subject is an API key's business. */
function rejectSubjectFields(input: unknown): void {
  if (Object.keys(subjectQuery(input)).length > 0) {
    throw new ValidationError(
      'a session token uses its own context: customerId and organizationId are for API keys',
    );
  }
}

function withoutSubject(input: unknown): unknown {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return input;
  const { customerId: _c, organizationId: _o, ...rest } = input as Record<string, unknown>;
  return rest;
}

/** The ids an event about a subject records, so a customer's erasure finds it by id (see docs/architecture.md). */
function subjectIdsOf(subject: { customerId: string | null; organizationId: string | null }): string[] {
  return [subject.customerId, subject.organizationId].filter((id): id is string => id !== null);
}
