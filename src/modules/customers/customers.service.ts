import { isDeepStrictEqual } from 'node:util';
import { IsolationLevel, LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../core/clock.js';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { Page } from '../../core/pagination.js';
import { type Principal, requireApiKey } from '../../core/principal.js';
import { parseInput } from '../../core/validation.js';
import { Customer } from './customer.entity.js';
import {
  assertMetadataLimits,
  createCustomerSchema,
  listCustomersSchema,
  mergeMetadata,
  updateCustomerSchema,
} from './customers.schemas.js';

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
  ) {}

  private get em() {
    return this.orm.em;
  }

  /**
   * Newest first; `email` is a case-insensitive substring filter; `total` counts every match.
   *
   * The total and the page come from one snapshot (a read-only REPEATABLE READ transaction), so they
   * agree even while customers are created or deleted. Without a filter the total is the app's count
   * kept by the database (customer_count), a sum of a few rows. With a filter it is counted: exact
   * counting is linear in the app's matches (see the README's performance section).
   *
   * The page is found in `customer_app_id_created_at_id_index` alone (an index-only scan of the app's
   * entries, e-mail included for the filter) and only its rows are read from the table. A page past
   * the middle is found from the oldest end, so no offset walks more than half of the app.
   */
  async listCustomers(principal: Principal, input: unknown): Promise<Page<Customer>> {
    const { appId } = requireApiKey(principal);
    const { email, limit, offset } = parseInput(listCustomersSchema, input ?? {});
    // PostgreSQL's LIKE escape character is `\` by default, so the escaped fragment is matched literally.
    const pattern = email === undefined || email === '' ? null : likeFragment(email.toLowerCase());
    const filter = pattern === null ? '' : ' and email_lower like ?';
    const filterParams = pattern === null ? [] : [pattern];
    return this.em.transactional(
      async (em) => {
        if (pattern !== null) {
          // A tenant's search reads that tenant's index entries only, never the whole table; and with
          // the app's entries in memory an index page costs about what a table page does, which is
          // what lets the planner prefer the covering index over the trigram bitmap's row rechecks for
          // a common fragment. JIT compilation costs more than it saves on these short queries.
          await em.execute(
            `select set_config('enable_seqscan', 'off', true), set_config('random_page_cost', '1.1', true),
                    set_config('jit', 'off', true)`,
          );
        }
        const [counted] = await em.execute<{ total: string }[]>(
          pattern === null
            ? 'select coalesce(sum(n), 0) as total from customer_count where app_id = ?'
            : `select count(*) as total from customer where app_id = ?${filter}`,
          [appId, ...filterParams],
        );
        const total = Number(counted?.total ?? 0);
        if (offset >= total) return { data: [], total, limit, offset };
        const fromNewest = offset * 2 < total;
        const ids = await em.execute<{ id: string }[]>(
          `select id from customer where app_id = ?${filter}
            order by created_at ${fromNewest ? 'desc' : 'asc'}, id ${fromNewest ? 'desc' : 'asc'}
            limit ? offset ?`,
          fromNewest
            ? [appId, ...filterParams, limit, offset]
            : [appId, ...filterParams, Math.min(limit, total - offset), Math.max(total - offset - limit, 0)],
        );
        if (ids.length === 0) return { data: [], total, limit, offset };
        const rows = await em.find(
          Customer,
          { id: { $in: ids.map((r) => r.id) } },
          { orderBy: { createdAt: 'desc', id: 'desc' } },
        );
        return { data: rows, total, limit, offset };
      },
      { isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true },
    );
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
      return await this.em.transactional((em) =>
        em.create(Customer, {
          id: newId('cus'),
          app: appId,
          email,
          emailLower: email.toLowerCase(),
          name: name ?? null,
          metadata: initial,
          createdAt: now,
          updatedAt: now,
        }),
      );
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) {
        throw new ConflictError(`A customer with e-mail ${email} already exists`);
      }
      throw error;
    }
  }

  /** One customer of the caller's app. */
  async getCustomer(principal: Principal, id: string): Promise<Customer> {
    const { appId } = requireApiKey(principal);
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
      }
      return customer;
    });
  }

  private async getCustomerOrFail(appId: string, id: string): Promise<Customer> {
    if (id.length > MAX_ID_LENGTH) throw new NotFoundError('Customer');
    const customer = await this.em.findOne(Customer, { id, app: appId });
    if (!customer) throw new NotFoundError('Customer', id);
    return customer;
  }
}
