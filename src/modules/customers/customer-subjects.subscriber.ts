import type { EventArgs, EventSubscriber } from '@mikro-orm/core';
import { noteCustomer } from '../../core/subjects.js';
import { Customer } from './customer.entity.js';

/**
 * Notes every customer the ORM loads, creates or changes as a subject of the request being served
 * (src/core/subjects.ts), whatever the answer later shows of it: a stored idempotent answer records it,
 * and the customer's erasure finds that answer by its id.
 */
export class CustomerSubjects implements EventSubscriber<Customer> {
  getSubscribedEntities() {
    return [Customer];
  }

  onLoad(args: EventArgs<Customer>): void {
    noteCustomer(args.entity.id);
  }

  afterCreate(args: EventArgs<Customer>): void {
    noteCustomer(args.entity.id);
  }

  afterUpdate(args: EventArgs<Customer>): void {
    noteCustomer(args.entity.id);
  }

  afterUpsert(args: EventArgs<Customer>): void {
    noteCustomer(args.entity.id);
  }
}
