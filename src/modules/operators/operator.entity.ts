import type { Opt } from '@mikro-orm/core';
import { Entity, Index, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import type { OperatorRole } from '../../core/principal.js';

/**
 * A named person who signs in to the dashboard by e-mail. Operators belong to Tollgate itself, not to
 * an app: their realm is separate from every app's customers.
 */
@Entity({ tableName: 'operator' })
export class Operator {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @Property({ type: 'text' })
  email!: string;

  @Property({ type: 'text', unique: true })
  emailLower!: string;

  @Property({ type: 'text' })
  role!: OperatorRole;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  updatedAt: Opt<Date> = new Date();
}

/** A single-use sign-in link of an operator. Only the SHA-256 of the token is stored. */
@Entity({ tableName: 'operator_sign_in_token' })
export class OperatorSignInToken {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => Operator, { deleteRule: 'cascade' })
  @Index()
  operator!: Operator;

  @Property({ type: 'text', unique: true })
  tokenHash!: string;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime' })
  expiresAt!: Date;

  @Property({ type: 'datetime', nullable: true })
  consumedAt: Date | null = null;
}

/**
 * An operator's dashboard session, carried by an httpOnly cookie. Only the SHA-256 of the token is
 * stored; the row goes with its operator (on delete cascade), so a removed operator is signed out at once.
 */
@Entity({ tableName: 'operator_session' })
export class OperatorSession {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @ManyToOne(() => Operator, { deleteRule: 'cascade' })
  @Index()
  operator!: Operator;

  @Property({ type: 'text', unique: true })
  tokenHash!: string;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  createdAt: Opt<Date> = new Date();

  /** Moved forward as the session is used (at most once a minute): the idle limit counts from here. */
  @Property({ type: 'datetime', defaultRaw: 'now()' })
  lastSeenAt: Opt<Date> = new Date();

  /** The absolute end, whatever the use. */
  @Property({ type: 'datetime' })
  expiresAt!: Date;

  @Property({ type: 'datetime', nullable: true })
  revokedAt: Date | null = null;

  @Property({ type: 'text', nullable: true })
  ip: string | null = null;

  @Property({ type: 'text', nullable: true })
  userAgent: string | null = null;
}
