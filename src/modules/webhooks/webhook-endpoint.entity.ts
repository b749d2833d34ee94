import type { Opt } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { App } from '../apps/app.entity.js';

/**
 * Where an app wants its events delivered. The signing secret must be readable to sign, so it is kept
 * encrypted (AES-256-GCM, see secret-box.ts); after a rotation the previous one keeps signing beside the
 * new one until `previousSecretExpiresAt`.
 */
@Entity({ tableName: 'webhook_endpoint' })
@Index({ properties: ['app', 'createdAt'] })
export class WebhookEndpoint {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => App, { deleteRule: 'cascade' })
  app!: App;

  @Property({ type: 'text' })
  url!: string;

  /** Event types delivered here; empty = every type. */
  @Property({ type: 'jsonb', defaultRaw: "'[]'" })
  events: Opt<string[]> = [];

  @Property({ type: 'text', nullable: true })
  description: string | null = null;

  @Property({ type: 'boolean', defaultRaw: 'true' })
  enabled: Opt<boolean> = true;

  @Property({ type: 'text', lazy: true })
  secretCiphertext!: string;

  @Property({ type: 'text', nullable: true, lazy: true })
  previousSecretCiphertext: string | null = null;

  @Property({ type: 'datetime', nullable: true })
  previousSecretExpiresAt: Date | null = null;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  updatedAt: Opt<Date> = new Date();
}
