import type { Opt } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property, Trigger } from '@mikro-orm/decorators/legacy';
import { API_KEY_CHANGES_TRIGGER } from '../../infra/change-triggers.js';
import { App } from './app.entity.js';

/** A server-side credential of an app. Only the SHA-256 of the secret and a display prefix are kept. */
@Entity({ tableName: 'api_key' })
// A revoked or deleted key leaves every instance's credential cache when the change commits.
@Trigger(API_KEY_CHANGES_TRIGGER)
export class ApiKey {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => App, { deleteRule: 'cascade' })
  @Index()
  app!: App;

  @Property({ type: 'text', unique: true })
  keyHash!: string;

  @Property({ type: 'text' })
  prefix!: string;

  /** What the operator calls the key (which server or job holds it); null for an unnamed one. */
  @Property({ type: 'text', nullable: true })
  name: string | null = null;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', nullable: true })
  lastUsedAt: Date | null = null;

  @Property({ type: 'datetime', nullable: true })
  revokedAt: Date | null = null;
}
