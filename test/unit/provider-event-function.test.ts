import { APPLY_PROVIDER_CHANGE_FUNCTION_SQL } from '../../migrations/Migration20261127200000.js';
import {
  APPLY_PROVIDER_EVENT_FUNCTION_SQL,
  JSON_TEXT_FUNCTION_SQL,
  MRR_MOVEMENT_FUNCTION_SQL,
  MRR_MOVEMENTS_FUNCTION_SQL,
} from '../../migrations/Migration20261128000000.js';
import { mrrMovementsFunctionsSql } from '../../src/modules/analytics/mrr-movements-sql.js';
import { applyProviderChangeFunctionSql } from '../../src/modules/subscriptions/provider-change-function.js';
import { applyProviderEventFunctionSql } from '../../src/modules/subscriptions/provider-event-function.js';
import { jsonTextFunctionSql } from '../../src/modules/subscriptions/subscription-event-sql.js';

// The functions are built from rules the rest of the code reads too (who is entitled to what, which
// endpoints take which events, how an MRR movement is recorded). A change of those rules must come with
// a migration that replaces them; until it does, this fails.
test('the migration creates the Stripe receiver’s first function as the shared rules build it today', () => {
  expect(APPLY_PROVIDER_EVENT_FUNCTION_SQL).toBe(applyProviderEventFunctionSql());
});

test('the migration creates the Stripe receiver’s change function as the shared rules build it today', () => {
  expect(APPLY_PROVIDER_CHANGE_FUNCTION_SQL).toBe(applyProviderChangeFunctionSql());
});

test('the migration creates the JSON writer of the receiver’s event bodies as the code builds it today', () => {
  expect(JSON_TEXT_FUNCTION_SQL).toBe(jsonTextFunctionSql());
});

test('the migration creates the ledger’s movement rule in SQL as the code builds it today', () => {
  expect([MRR_MOVEMENT_FUNCTION_SQL, MRR_MOVEMENTS_FUNCTION_SQL]).toEqual(mrrMovementsFunctionsSql());
});
