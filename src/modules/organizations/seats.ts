import type { EntityManager } from '@mikro-orm/postgresql';
import { ConflictError } from '../../core/errors.js';
import { type PlanSeats, seatLimit } from '../plans/plan-seats.js';
import { loadEntitledPlanWithAnchor } from '../subscriptions/entitled-plan.js';
import { ENTITLING_STATUSES_SQL } from '../subscriptions/subscription.entity.js';

/** An organization's seats: members and pending (unexpired) invitations both hold one. */
export interface SeatUsage {
  readonly used: number;
  readonly members: number;
  readonly pending: number;
  /** The entitled plan's cap; null when its plan does not count seats or sets no cap. */
  readonly limit: number | null;
  /** The billed quantity of a per-seat subscription as Tollgate last set it; null without one. */
  readonly quantity: number | null;
  /** More seats used than the limit allows (after the limit was lowered): new members are refused. */
  readonly overLimit: boolean;
  /** The entitled plan's seats (what is counted and how it is billed). */
  readonly plan: PlanSeats | null;
  /** The status of the per-seat subscription that bills the seats; null without one. */
  readonly billedStatus: string | null;
}

/** How the organization's entitled plan counts seats; null when it counts none. */
export async function planSeatsOf(
  em: EntityManager,
  appId: string,
  organizationId: string,
): Promise<PlanSeats | null> {
  return (await loadEntitledPlanWithAnchor(em, { appId, organizationId })).seats ?? null;
}

/**
 * Reads an organization's seats through `em` (in its transaction when it has one: the member changes
 * count under the organization's row lock, so what they read cannot change before they insert).
 */
export async function readSeats(
  em: EntityManager,
  appId: string,
  organizationId: string,
  now: Date,
): Promise<SeatUsage> {
  const [counts] = await em.execute<{ members: number; pending: number }[]>(
    `select (select count(*)::int from organization_member where organization_id = ?) as members,
            (select count(*)::int from organization_invitation
              where organization_id = ? and state = 'pending' and expires_at > ?) as pending`,
    [organizationId, organizationId, now],
  );
  const { members, pending } = counts!;
  const plan = await planSeatsOf(em, appId, organizationId);
  let billed: { status: string; seat_quantity: number | null } | undefined;
  if (plan?.mode === 'per_seat') {
    [billed] = await em.execute<{ status: string; seat_quantity: number | null }[]>(
      `select status, seat_quantity from subscription
        where app_id = ? and organization_id = ? and status in (${ENTITLING_STATUSES_SQL})
        order by created_at desc, id desc limit 1`,
      [appId, organizationId],
    );
  }
  const limit = seatLimit(plan);
  const used = members + pending;
  return {
    used,
    members,
    pending,
    limit,
    quantity: billed?.seat_quantity ?? null,
    overLimit: limit !== null && used > limit,
    plan,
    billedStatus: billed?.status ?? null,
  };
}

/**
 * Refuses (409) another seat when the organization has none left, or when its per-seat subscription is
 * past due (a seat added now could not be billed). Called under the organization's row lock, between the
 * count and the insert, so concurrent additions cannot overshoot the limit. An accepted invitation
 * (`accepting`) had its seat while pending: it needs only that the members stay within the limit, so
 * after the limit was lowered the first invitees to accept take the seats that are left.
 */
export async function assertSeatAvailable(
  em: EntityManager,
  appId: string,
  organizationId: string,
  now: Date,
  options: { accepting?: boolean } = {},
): Promise<SeatUsage> {
  const usage = await readSeats(em, appId, organizationId, now);
  const { used, members, limit } = usage;
  if (limit !== null && (options.accepting ? members : used) >= limit) {
    throw new ConflictError(`seat limit reached: ${used} of ${limit} seats used`);
  }
  if (usage.billedStatus === 'past_due') {
    throw new ConflictError(
      "the organization's per-seat subscription is past_due: settle its payment before adding members",
    );
  }
  return usage;
}
