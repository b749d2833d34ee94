import { isDeepStrictEqual } from 'node:util';
import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
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

  /** Newest first; `email` is a case-insensitive substring filter; `total` counts every match. */
  async listCustomers(principal: Principal, input: unknown): Promise<Page<Customer>> {
    const { appId } = requireApiKey(principal);
    const { email, limit, offset } = parseInput(listCustomersSchema, input ?? {});
    // PostgreSQL's LIKE escape character is `\` by default, so the escaped fragment is matched literally;
    // `email_lower` carries a trigram index, which serves `%fragment%` patterns.
    const where =
      email === undefined || email === ''
        ? { app: appId }
        : { app: appId, emailLower: { $like: likeFragment(email.toLowerCase()) } };
    const [data, total] = await this.em.findAndCount(Customer, where, {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit,
      offset,
    });
    return { data, total, limit, offset };
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
    await em
      .createQueryBuilder(Customer)
      .insert({
        id: newId('cus'),
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
    return em.findOneOrFail(Customer, { app: appId, emailLower });
  }

  /** Records the customer's Stripe customer when it has none yet (a completed checkout links it). */
  linkPaymentCustomer(customer: Customer, paymentCustomerId: string): void {
    if (customer.paymentCustomerId) return;
    customer.paymentCustomerId = paymentCustomerId;
    customer.updatedAt = this.clock.now();
  }

  private async getCustomerOrFail(appId: string, id: string): Promise<Customer> {
    if (id.length > MAX_ID_LENGTH) throw new NotFoundError('Customer');
    const customer = await this.em.findOne(Customer, { id, app: appId });
    if (!customer) throw new NotFoundError('Customer', id);
    return customer;
  }
}
