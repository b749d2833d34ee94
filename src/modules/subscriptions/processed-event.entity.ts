import type { Opt } from '@mikro-orm/core';
import { Entity, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';

/** A provider event already applied; its primary key makes each event id apply exactly once. */
@Entity({ tableName: 'processed_event' })
export class ProcessedEvent {
  @PrimaryKey({ type: 'text' })
  id!: string;

  @Property({ type: 'text' })
  type!: string;

  @Property({ type: 'datetime', defaultRaw: 'now()' })
  processedAt: Opt<Date> = new Date();
}
