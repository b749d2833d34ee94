import { APPLY_PROVIDER_EVENT_FUNCTION_SQL } from '../../migrations/Migration20261127160000.js';
import { applyProviderEventFunctionSql } from '../../src/modules/subscriptions/provider-event-function.js';

// The function is built from rules the rest of the code reads too (who is entitled to what, which
// endpoints take which events). A change of those rules must come with a migration that replaces it;
// until it does, this fails.
test('the migration creates the Stripe receiver’s function as the shared rules build it today', () => {
  expect(APPLY_PROVIDER_EVENT_FUNCTION_SQL).toBe(applyProviderEventFunctionSql());
});
