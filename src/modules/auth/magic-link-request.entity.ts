import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { App } from '../apps/app.entity.js';

/**
 * One accepted magic-link request, counted for the per-e-mail abuse limit. Recorded whether or not the
 * e-mail belongs to a customer, so that known and unknown addresses reach the limit alike (no
 * enumeration); rows older than the limit window are deleted as new requests arrive.
 */
@Entity({ tableName: 'magic_link_request' })
@Index({ properties: ['app', 'emailLower', 'createdAt'] })
export class MagicLinkRequest {
  @PrimaryKey({ type: 'uuid', defaultRaw: 'gen_random_uuid()' })
  id!: string;

  @ManyToOne(() => App, { deleteRule: 'cascade' })
  app!: App;

  @Property({ type: 'text' })
  emailLower!: string;

  @Property({ type: 'datetime' })
  createdAt!: Date;
}
