import { isDeepStrictEqual } from 'node:util';
import type { EntityDictionary } from '@mikro-orm/core';
import { IsolationLevel, LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { Page } from '../../core/pagination.js';
import { type AppScope, type Principal, requireApiKey } from '../../core/principal.js';
import { parseInput } from '../../core/validation.js';
import { actingOnApp } from '../apps/app-rules.js';
import type { OutboundEvents } from '../webhooks/outbound-events.js';
import { Customer } from './customer.entity.js';
import { presentCustomer } from './customer.presenter.js';
import {
  assertMetadataLimits,
  createCustomerSchema,
  listCustomersSchema,
  mergeMetadata,
  updateCustomerSchema,
} from './customers.schemas.js';

/**
 * Up to this offset the unfiltered page is found from the newest end in one statement (an index-only
 * walk of at most this many entries, a few milliseconds); deeper, from the nearer end.
 */
const NEAR_OFFSET = 10_000;

/** The app's customer count: the sum of its shard rows in customer_count (see customer-count.entity.ts). */
const COUNT_SQL = '(select coalesce(sum(n), 0) from customer_count where app_id = ?)';

/** Longer ids cannot exist (ids are `cus_` + 32 characters); answering 404 at once spares a query. */
const MAX_ID_LENGTH = 100;

/** `%`, `_` and the escape character itself are literal in the e-mail filter. */
function likeFragment(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * Customers of an app, as the `/v1/customers` endpoints and GraphQL use them. Only an API key of the
 * customer's app may call these (a session token → 403); another app's customer is reported as absent.
 */
export class CustomersService {
  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
    private readonly events: OutboundEvents,
  ) {}

  private get em() {
    return this.orm.em;
  }

  /**
   * Newest first; `email` is a case-insensitive substring filter; `total` counts every match. The
   * operator names the app (`scope`); an API key lists its own.
   *
   * Without a filter the total is the app's count kept by the database (customer_count), a sum of a
   * few rows. With a filter it is counted: exact counting is linear in the app's matches (see the
   * README's performance section). The total and the page always come from one snapshot, so they
   * agree even while customers are created or deleted.
   *
   * The page is found in `customer_app_id_created_at_id_index` alone (an index-only scan of the app's
   * entries, e-mail included for the filter) and only its rows are read from the table.
   */
  async listCustomers(principal: Principal, input: unknown, scope?: AppScope): Promise<Page<Customer>> {
    const { appId } = requireApiKey(await actingOnApp(this.em, principal, scope));
    const { email, limit, offset } = parseInput(listCustomersSchema, input ?? {});
    if (email === undefined || email === '') {
      if (offset <= NEAR_OFFSET) return this.listPage(this.em, appId, null, limit, offset, 'newest');
      return this.listFromNearerEnd(appId, limit, offset);
    }
    // PostgreSQL's LIKE escape character is `\` by default, so the escaped fragment is matched literally.
    const pattern = likeFragment(email.toLowerCase());
    return this.em.transactional(async (em) => {
      // A tenant's search reads that tenant's index entries only, never the whole table; and with the
      // app's entries in memory an index page costs about what a table page does, which is what lets
      // the planner prefer the covering index over the trigram bitmap's row rechecks for a common
      // fragment. JIT compilation costs more than it saves on these queries.
      await em.execute(
        `select set_config('enable_seqscan', 'off', true), set_config('random_page_cost', '1.1', true),
                set_config('jit', 'off', true)`,
      );
      return this.listPage(em, appId, pattern, limit, offset, 'newest');
    });
  }

  /**
   * A deep page of the unfiltered list, found from whichever end of the app's index is nearer, so no
   * offset walks more than half of the app. The direction needs the total first, so both statements
   * run in one read-only snapshot.
   */
  private listFromNearerEnd(appId: string, limit: number, offset: number): Promise<Page<Customer>> {
    return this.em.transactional(
      async (em) => {
        const [row] = await em.execute<{ total: string }[]>(`select ${COUNT_SQL} as total`, [appId]);
        const total = Number(row?.total ?? 0);
        if (offset * 2 < total) return this.listPage(em, appId, null, limit, offset, 'newest');
        if (offset >= total) return { data: [], total, limit, offset };
        const page = await this.listPage(
          em,
          appId,
          null,
          Math.min(limit, total - offset),
          Math.max(total - offset - limit, 0),
          'oldest',
        );
        return { ...page, limit, offset };
      },
      { isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true },
    );
  }

  /**
   * One statement: the total, and the page's ids found index-only then joined to their rows. Counted
   * from `direction`'s end; the rows come back newest first either way.
   */
  private async listPage(
    em: EntityManager,
    appId: string,
    pattern: string | null,
    limit: number,
    offset: number,
    direction: 'newest' | 'oldest',
  ): Promise<Page<Customer>> {
    const order = direction === 'newest' ? 'desc' : 'asc';
    const filter = pattern === null ? '' : ' and email_lower like ?';
    const total = pattern === null ? COUNT_SQL : `(select count(*) from customer where app_id = ?${filter})`;
    const rows = await em.execute<(Record<string, unknown> & { total: string })[]>(
      `select t.total, c.*
         from (select ${total} as total) as t
         left join (select id, created_at from customer where app_id = ?${filter}
                     order by created_at ${order}, id ${order} limit ? offset ?) as p on true
         left join customer as c on c.id = p.id
        order by p.created_at desc, p.id desc`,
      pattern === null ? [appId, appId, limit, offset] : [appId, pattern, appId, pattern, limit, offset],
    );
    const data = rows
      .filter((row) => row.id !== null)
      .map(({ total: _, ...row }) => em.map(Customer, row as EntityDictionary<Customer>));
    return { data, total: Number(rows[0]?.total ?? 0), limit, offset };
  }

  /** Creates a customer; the e-mail must be new to the app regardless of case (else 409). */
  async createCustomer(principal: Principal, input: unknown): Promise<Customer> {
    const { appId } = requireApiKey(principal);
    const { email, name, metadata } = parseInput(createCustomerSchema, input);
    const initial = mergeMetadata({}, metadata ?? {});
    assertMetadataLimits(initial);
    const now = this.clock.now();
    try {
      // A transaction of its own: a refused insert is discarded with it instead of staying queued in the
      // caller's unit of work, where the next flush of anything else would retry it and fail again.
      return await this.em.transactional(async (em) => {
        const customer = em.create(Customer, {
          id: newId('cus'),
          app: appId,
          email,
          emailLower: email.toLowerCase(),
          name: name ?? null,
          metadata: initial,
          createdAt: now,
          updatedAt: now,
        });
        await this.events.record(em, appId, 'customer.created', presentCustomer(customer));
        return customer;
      });
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) {
        throw new ConflictError(`A customer with e-mail ${email} already exists`);
      }
      throw error;
    }
  }

  /** One customer of the caller's app (or of the app the operator names). */
  async getCustomer(principal: Principal, id: string, scope?: AppScope): Promise<Customer> {
    const { appId } = requireApiKey(await actingOnApp(this.em, principal, scope));
    return this.getCustomerOrFail(appId, id);
  }

  /**
   * Changes `name` and merges `metadata` (see `mergeMetadata`). The row is locked for the merge, so
   * concurrent updates of different keys all survive and the metadata limits hold for the result.
   * `updatedAt` moves only when something actually changed.
   */
  async updateCustomer(principal: Principal, id: string, input: unknown): Promise<Customer> {
    const { appId } = requireApiKey(principal);
    const patch = parseInput(updateCustomerSchema, input);
    if (id.length > MAX_ID_LENGTH) throw new NotFoundError('Customer');
    return this.em.transactional(async (em) => {
      const customer = await em.findOne(
        Customer,
        { id, app: appId },
        { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
      );
      if (!customer) throw new NotFoundError('Customer', id);
      const name = patch.name === undefined ? customer.name : patch.name;
      const metadata =
        patch.metadata === undefined ? customer.metadata : mergeMetadata(customer.metadata, patch.metadata);
      assertMetadataLimits(metadata);
      if (name !== customer.name || !isDeepStrictEqual(metadata, customer.metadata)) {
        customer.name = name;
        customer.metadata = metadata;
        customer.updatedAt = this.clock.now();
        await this.events.record(em, appId, 'customer.updated', presentCustomer(customer));
      }
      return customer;
    });
  }

  /**
   * The app's customer with this e-mail (in any case), created when there is none: for customers who
   * arrive without the customers API (a magic-link login with `autoCreateCustomer`, a checkout by
   * e-mail). Runs in the caller's transaction `em`; if the same address is created concurrently, that
   * customer is the one (the insert yields to the unique key instead of failing the transaction).
   */
  async findOrCreateByEmail(
    em: EntityManager,
    appId: string,
    email: string,
    details: { readonly name?: string | null } = {},
  ): Promise<Customer> {
    const emailLower = email.toLowerCase();
    const existing = await em.findOne(Customer, { app: appId, emailLower });
    if (existing) return existing;
    const now = this.clock.now();
    const id = newId('cus');
    await em
      .createQueryBuilder(Customer)
      .insert({
        id,
        app: appId,
        email,
        emailLower,
        name: details.name ?? null,
        createdAt: now,
        updatedAt: now,
      })
      .onConflict(['app', 'emailLower'])
      .ignore()
      .execute();
    const customer = await em.findOneOrFail(Customer, { app: appId, emailLower });
    if (customer.id === id)
      await this.events.record(em, appId, 'customer.created', presentCustomer(customer));
    return customer;
  }

  /**
   * Records the customer's Stripe customer when it has none yet (a completed checkout links it), in the
   * caller's transaction `em`.
   */
  async linkPaymentCustomer(em: EntityManager, customer: Customer, paymentCustomerId: string): Promise<void> {
    if (customer.paymentCustomerId) return;
    customer.paymentCustomerId = paymentCustomerId;
    customer.updatedAt = this.clock.now();
    await this.events.record(em, customer.app.id, 'customer.updated', presentCustomer(customer));
  }

  private async getCustomerOrFail(appId: string, id: string): Promise<Customer> {
    if (id.length > MAX_ID_LENGTH) throw new NotFoundError('Customer');
    const customer = await this.em.findOne(Customer, { id, app: appId });
    if (!customer) throw new NotFoundError('Customer', id);
    return customer;
  }
}
