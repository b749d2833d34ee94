import type { Opt } from '@mikro-orm/core';
import { Entity, ManyToOne, PrimaryKey, Property, Trigger, Unique } from '@mikro-orm/decorators/legacy';
import { PLAN_CHANGES_TRIGGER } from '../../infra/change-triggers.js';
import { App } from '../apps/app.entity.js';
import type { MeteredFeature } from './metered-feature.js';
import type { PlanSeats } from './plan-seats.js';

/** A feature's value on a plan: a flag, a number, a string, or a metered allowance. */
export type FeatureValue = boolean | number | string | MeteredFeature;
export type Features = Record<string, FeatureValue>;

/**
 * A plan of an app. `slug` is the operator's id (e.g. `pro`), shown as `id` in both APIs;
 * `id` is the internal key subscriptions point to, so a slug can never collide across apps.
 */
@Entity({ tableName: 'plan' })
@Unique({ properties: ['app', 'slug'] })
// A plan change (features, default plan) reaches every instance's entitlement cache.
@Trigger(PLAN_CHANGES_TRIGGER)
export class Plan {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => App, { deleteRule: 'cascade' })
  app!: App;

  @Property({ type: 'text' })
  slug!: string;

  @Property({ type: 'text' })
  name!: string;

  @Property({ type: 'text', nullable: true })
  stripePriceId: string | null = null;

  @Property({ type: 'integer', default: 0 })
  trialDays: Opt<number> = 0;

  @Property({ type: 'jsonb', defaultRaw: "'{}'" })
  features: Opt<Features> = {};

  /** Seats of an organization on this plan (a cap, or billed per seat); null: seats are not counted. */
  @Property({ type: 'jsonb', nullable: true })
  seats: PlanSeats | null = null;

  @Property({ type: 'boolean', default: false })
  isDefault: Opt<boolean> = false;

  /** Sold no more: checkout and plan changes refuse it; subscriptions already on it keep it. */
  @Property({ type: 'boolean', default: false })
  archived: Opt<boolean> = false;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', defaultRaw: 'now()', onUpdate: () => new Date() })
  updatedAt: Opt<Date> = new Date();
}
