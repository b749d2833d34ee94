import { ManualClock } from '../../src/core/clock.js';
import {
  ConflictError,
  ForbiddenError,
  NotFoundError,
  UnauthorizedError,
  ValidationError,
} from '../../src/core/errors.js';
import { ANONYMOUS, type ApiKeyPrincipal } from '../../src/core/principal.js';
import { Fixtures } from '../helpers/entitlements-fixtures.js';
import { expectDomainError, type ServiceCore, startServices } from '../helpers/services.js';

/** CustomersService called directly with a Principal, on the test database: rules, tenancy and errors. */

const clock = new ManualClock(new Date('2026-04-01T08:00:00.000Z'));
let core: ServiceCore;
let principal: ApiKeyPrincipal;
let other: ApiKeyPrincipal;

beforeAll(async () => {
  core = await startServices({ clock });
  principal = (await core.createApp()).principal;
  other = (await core.createApp()).principal;
});
afterAll(async () => {
  await core.close();
});

let sequence = 0;
const uniqueEmail = (local = 'svc') => `${local}.${++sequence}.${Date.now()}@example.com`;

describe('CustomersService', () => {
  it('creates a customer in the caller’s app, with the clock’s time and the merged metadata', async () => {
    const email = uniqueEmail('Mixed.Case');
    const created = await core.run(() =>
      core.services.customers.createCustomer(principal, {
        email,
        name: 'Ada',
        metadata: { tier: 'gold', gone: null },
      }),
    );
    expect(created).toMatchObject({
      email,
      emailLower: email.toLowerCase(),
      name: 'Ada',
      metadata: { tier: 'gold' },
      createdAt: clock.now(),
      updatedAt: clock.now(),
    });
    expect(created.id).toMatch(/^cus_/);
    const read = await core.run(() => core.services.customers.getCustomer(principal, created.id));
    expect(read.email).toBe(email);
  });

  it('moves updatedAt only when an update changes something, and merges metadata keys', async () => {
    const customer = await core.run(() =>
      core.services.customers.createCustomer(principal, { email: uniqueEmail(), metadata: { a: 1, b: 2 } }),
    );
    clock.advance(60_000);
    const same = await core.run(() =>
      core.services.customers.updateCustomer(principal, customer.id, { metadata: { a: 1 } }),
    );
    expect(same.updatedAt).toEqual(customer.updatedAt);
    clock.advance(1_000);
    const changed = await core.run(() =>
      core.services.customers.updateCustomer(principal, customer.id, {
        name: 'Renamed',
        metadata: { b: null, c: 3 },
      }),
    );
    expect(changed).toMatchObject({ name: 'Renamed', metadata: { a: 1, c: 3 }, updatedAt: clock.now() });
  });

  it('lists the caller’s customers newest first, filtered by an e-mail fragment, with the total', async () => {
    const tag = `list${Date.now()}`;
    const first = await core.run(() =>
      core.services.customers.createCustomer(principal, { email: `${tag}.one@example.com` }),
    );
    clock.advance(1_000);
    const second = await core.run(() =>
      core.services.customers.createCustomer(principal, { email: `${tag}.two@example.com` }),
    );
    await core.run(() =>
      core.services.customers.createCustomer(other, { email: `${tag}.elsewhere@example.com` }),
    );
    const page = await core.run(() =>
      core.services.customers.listCustomers(principal, { email: tag.toUpperCase(), limit: 1 }),
    );
    expect({
      ids: page.data.map((c) => c.id),
      total: page.total,
      limit: page.limit,
      offset: page.offset,
    }).toEqual({
      ids: [second.id],
      total: 2,
      limit: 1,
      offset: 0,
    });
    const rest = await core.run(() =>
      core.services.customers.listCustomers(principal, { email: tag, limit: 1, offset: 1 }),
    );
    expect(rest.data.map((c) => c.id)).toEqual([first.id]);
  });

  it('keeps the unit of work usable after a refused duplicate', async () => {
    const customers = core.services.customers;
    const email = `uow.${Date.now()}@example.com`;
    const other = `uow2.${Date.now()}@example.com`;
    await core.run(async () => {
      await customers.createCustomer(principal, { email });
      await expect(
        customers.createCustomer(principal, { email: email.toUpperCase() }),
      ).rejects.toBeInstanceOf(ConflictError);
      // Had the refused insert stayed queued, this flush would retry it and fail again.
      const next = await customers.createCustomer(principal, { email: other, name: 'Next' });
      const renamed = await customers.updateCustomer(principal, next.id, { name: 'Renamed' });
      expect(renamed.name).toBe('Renamed');
    });
    const page = await core.run(() => customers.listCustomers(principal, { email: 'uow' }));
    expect(page.data.map((c) => c.email).sort()).toEqual([email, other].sort());
  });

  it('refuses a second customer with the same e-mail in any case, but not in another app', async () => {
    const email = uniqueEmail();
    await core.run(() => core.services.customers.createCustomer(principal, { email }));
    await expectDomainError(
      core.run(() => core.services.customers.createCustomer(principal, { email: email.toUpperCase() })),
      ConflictError,
      `A customer with e-mail ${email.toUpperCase()} already exists`,
    );
    const elsewhere = await core.run(() => core.services.customers.createCustomer(other, { email }));
    expect(elsewhere.email).toBe(email);
  });

  it('refuses invalid input with a ValidationError naming the field', async () => {
    const customers = core.services.customers;
    await expectDomainError(
      core.run(() => customers.createCustomer(principal, { email: 'not-an-address' })),
      ValidationError,
      'email: must be a valid e-mail address',
    );
    await expectDomainError(
      core.run(() => customers.createCustomer(principal, { email: uniqueEmail(), nickname: 'x' })),
      ValidationError,
      'unknown field: nickname',
    );
    const customer = await core.run(() => customers.createCustomer(principal, { email: uniqueEmail() }));
    const tooMany = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i]));
    await expectDomainError(
      core.run(() => customers.updateCustomer(principal, customer.id, { metadata: tooMany })),
      ValidationError,
      'metadata: must have at most 50 keys (would have 51)',
    );
    const stored = await core.run(() => customers.getCustomer(principal, customer.id));
    expect(stored.metadata).toEqual({});
  });

  it('reports another app’s customer as absent, and leaves it alone', async () => {
    const theirs = await core.run(() =>
      core.services.customers.createCustomer(other, { email: uniqueEmail() }),
    );
    await expectDomainError(
      core.run(() => core.services.customers.getCustomer(principal, theirs.id)),
      NotFoundError,
      `Customer ${theirs.id} not found`,
    );
    await expectDomainError(
      core.run(() => core.services.customers.updateCustomer(principal, theirs.id, { name: 'Taken' })),
      NotFoundError,
      `Customer ${theirs.id} not found`,
    );
    const unchanged = await core.run(() => core.services.customers.getCustomer(other, theirs.id));
    expect(unchanged.name).toBeNull();
  });

  it('is for API keys only: a session is forbidden, no credential is unauthorized', async () => {
    const fixtures = new Fixtures(core, principal.appId);
    const customerId = await fixtures.customer(uniqueEmail());
    const session = await core.principalOf(await fixtures.session(customerId));
    expect(session).toMatchObject({ kind: 'session', appId: principal.appId, customerId });
    await expectDomainError(
      core.run(() => core.services.customers.getCustomer(session, customerId)),
      ForbiddenError,
      'This operation needs an API key',
    );
    await expectDomainError(
      core.run(() => core.services.customers.listCustomers(ANONYMOUS, {})),
      UnauthorizedError,
      'Invalid or missing credentials',
    );
  });
});
