import type { MikroORM } from '@mikro-orm/postgresql';
import { ENTITLING_STATUSES, Subscription } from '../subscriptions/subscription.entity.js';
import { type Features, Plan } from './plan.entity.js';

/** Whose entitlements: a customer's own, or an organization's (shared by its members). */
export type EntitlementContext =
  | { readonly appId: string; readonly customerId: string; readonly organizationId?: undefined }
  | { readonly appId: string; readonly organizationId: string; readonly customerId?: undefined };

export interface Entitlements {
  readonly planName: string | null;
  readonly features: Features;
}

export const NO_ENTITLEMENTS: Entitlements = Object.freeze({ planName: null, features: Object.freeze({}) });

/**
 * Entitlements of a context: the plan of its newest entitling subscription (trialing, active,
 * past_due), else the app's default plan, else `{planName: null, features: {}}`.
 */
export class EntitlementsService {
  constructor(private readonly orm: MikroORM) {}

  async resolve(context: EntitlementContext): Promise<Entitlements> {
    const em = this.orm.em;
    const owner =
      context.organizationId !== undefined
        ? { organization: context.organizationId }
        : { customer: context.customerId, organization: null };
    const subscription = await em.findOne(
      Subscription,
      { app: context.appId, ...owner, status: { $in: [...ENTITLING_STATUSES] } },
      { populate: ['plan'], orderBy: { createdAt: 'desc', id: 'desc' } },
    );
    const plan = subscription?.plan ?? (await em.findOne(Plan, { app: context.appId, isDefault: true }));
    return plan ? { planName: plan.name, features: { ...plan.features } } : NO_ENTITLEMENTS;
  }
}
