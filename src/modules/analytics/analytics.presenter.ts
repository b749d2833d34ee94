import type { Analytics, MovementTotals } from './analytics.service.js';

const totalsOf = (t: MovementTotals) => ({
  newMrr: t.newMrr,
  expansionMrr: t.expansionMrr,
  contractionMrr: t.contractionMrr,
  churnedMrr: t.churnedMrr,
  reactivationMrr: t.reactivationMrr,
  newSubscriptions: t.newSubscriptions,
  canceledSubscriptions: t.canceledSubscriptions,
  trialConversions: t.trialConversions,
});

/** The `GET /v1/analytics` answer, field by field. */
export function presentAnalytics(analytics: Analytics) {
  return {
    currency: analytics.currency,
    interval: analytics.interval,
    periods: analytics.periods.map((p) => ({
      start: p.start,
      mrr: p.mrr,
      activeSubscriptions: p.activeSubscriptions,
      trialingSubscriptions: p.trialingSubscriptions,
      ...totalsOf(p),
    })),
    totals: totalsOf(analytics.totals),
    byPlan: analytics.byPlan.map((p) => ({
      planId: p.planId,
      mrr: p.mrr,
      activeSubscriptions: p.activeSubscriptions,
    })),
    definitions: { ...analytics.definitions },
  };
}
