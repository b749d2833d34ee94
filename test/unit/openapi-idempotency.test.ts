import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import { isRefusedRestPath } from '../../src/modules/idempotency/idempotency-rules.js';

/**
 * The document must say where `Idempotency-Key` works, because clients generated from it (the client
 * package among them) only let a caller send the header where it is declared.
 */
const document = YAML.parse(readFileSync(new URL('../../schema/openapi.yaml', import.meta.url), 'utf8'));

/** A concrete path for a templated one, so the middleware's own rules can be asked about it. */
const concrete = (template: string) => template.replace(/\{[^}]+\}/g, 'x_1');

const posts = Object.entries(document.paths as Record<string, { post?: Record<string, any> }>)
  .filter(([, item]) => item.post)
  .map(([template, item]) => ({
    template,
    operation: item.post as { operationId: string; security?: unknown[]; parameters?: { $ref?: string }[] },
  }));

const declaresKey = (operation: { parameters?: { $ref?: string }[] }) =>
  (operation.parameters ?? []).some((p) => p.$ref === '#/components/parameters/IdempotencyKey');

describe('Idempotency-Key in schema/openapi.yaml', () => {
  it('is declared on every credentialed POST that accepts it, and on no POST that refuses it', () => {
    const wrong = posts
      .filter(({ template, operation }) => {
        // The Stripe receiver is authenticated by its signature, not a credential: no key applies.
        const credentialed = (operation.security ?? [{}]).some((s) => Object.keys(s as object).length > 0);
        const accepts = credentialed && !isRefusedRestPath(concrete(template));
        return declaresKey(operation) !== accepts;
      })
      .map(({ operation }) => operation.operationId);
    expect(wrong).toEqual([]);
  });

  it('covers the billing moves and the REST twins that create or change something', () => {
    const declared = posts
      .filter(({ operation }) => declaresKey(operation))
      .map((p) => p.operation.operationId);
    expect(declared).toEqual(
      expect.arrayContaining([
        'createCustomer',
        'changeSubscriptionPlan',
        'createBillingPortalSession',
        'syncCustomerSubscriptions',
        'syncOrganizationSubscriptions',
        'retryWebhookDelivery',
      ]),
    );
  });
});
