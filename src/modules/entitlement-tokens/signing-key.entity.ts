import type { Opt } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { App } from '../apps/app.entity.js';

/**
 * A key pair an app's entitlement tokens are signed with. The public half is published in the app's
 * JWKS from `createdAt`; the key signs from `signsFrom` (a rotated-in key only after caches have seen it)
 * until a newer key takes over; it leaves the JWKS at `retireAt` or, at once, at `revokedAt`. The
 * private JWK is kept only sealed (AES-256-GCM, as webhook endpoint secrets are).
 */
@Entity({ tableName: 'entitlement_signing_key' })
export class EntitlementSigningKey {
  /** The JWK's `kid`. */
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => App, { deleteRule: 'cascade' })
  @Index()
  app!: App;

  @Property({ type: 'text' })
  algorithm!: string;

  @Property({ type: 'jsonb' })
  publicJwk!: Record<string, unknown>;

  /** The private JWK, sealed by SecretBox: unreadable without the server's key. */
  @Property({ type: 'text' })
  privateKeySealed!: string;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime' })
  signsFrom!: Date;

  @Property({ type: 'datetime', nullable: true })
  retireAt: Date | null = null;

  @Property({ type: 'datetime', nullable: true })
  revokedAt: Date | null = null;
}
