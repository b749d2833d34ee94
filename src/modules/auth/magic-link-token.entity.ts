import type { Opt } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { App } from '../apps/app.entity.js';
import { Customer } from '../customers/customer.entity.js';

/** A single-use login link. Only the SHA-256 of the token is stored. */
@Entity({ tableName: 'magic_link_token' })
@Index({ properties: ['app', 'emailLower', 'createdAt'] })
export class MagicLinkToken {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => App, { deleteRule: 'cascade' })
  app!: App;

  @ManyToOne(() => Customer, { deleteRule: 'cascade' })
  customer!: Customer;

  @Property({ type: 'text' })
  emailLower!: string;

  @Property({ type: 'text', unique: true })
  tokenHash!: string;

  @Property({ type: 'text' })
  redirectUrl!: string;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime' })
  expiresAt!: Date;

  @Property({ type: 'datetime', nullable: true })
  consumedAt: Date | null = null;
}
