import { ConflictError } from '../../src/core/errors.js';
import type { Principal } from '../../src/core/principal.js';
import { withContext } from '../../src/db.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let principal: Principal;

beforeAll(async () => {
  server = await startTestServer();
  const { appId } = await server.createApp();
  principal = { kind: 'apiKey', appId, apiKeyId: 'key_test' };
});
afterAll(async () => {
  await server.close();
});

describe('CustomersService in one unit of work', () => {
  it('keeps the unit of work usable after a refused duplicate', async () => {
    const customers = server.services.customers;
    const email = `uow.${Date.now()}@example.com`;
    const other = `uow2.${Date.now()}@example.com`;
    await withContext(server.deps.orm, async () => {
      await customers.createCustomer(principal, { email });
      await expect(
        customers.createCustomer(principal, { email: email.toUpperCase() }),
      ).rejects.toBeInstanceOf(ConflictError);
      // Had the refused insert stayed queued, this flush would retry it and fail again.
      const next = await customers.createCustomer(principal, { email: other, name: 'Next' });
      const renamed = await customers.updateCustomer(principal, next.id, { name: 'Renamed' });
      expect(renamed.name).toBe('Renamed');
    });
    const page = await withContext(server.deps.orm, () =>
      customers.listCustomers(principal, { email: 'uow' }),
    );
    expect(page.data.map((c) => c.email).sort()).toEqual([email, other].sort());
  });
});
