import type { Features, Plan } from './plan.entity.js';
import type { PlanSeats } from './plan-seats.js';

/** A plan as the API shows it (GraphQL `Plan`; the `plan.updated` event's `data`). */
export interface PlanView {
  readonly id: string;
  readonly name: string;
  readonly stripePriceId: string | null;
  readonly trialDays: number;
  readonly features: Features;
  readonly isDefault: boolean;
  readonly archived: boolean;
  readonly seats: PlanSeats | null;
}

export function presentPlan(plan: Plan): PlanView {
  return {
    id: plan.slug,
    name: plan.name,
    stripePriceId: plan.stripePriceId,
    trialDays: plan.trialDays,
    features: { ...plan.features },
    isDefault: plan.isDefault,
    archived: plan.archived,
    seats: plan.seats ? { ...plan.seats } : null,
  };
}
