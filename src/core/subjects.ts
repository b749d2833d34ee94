import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The subjects of the request being served: every customer whose data it read, wrote or showed. A row
 * written on a customer's behalf records the ids it concerns when it is written, and a customer's
 * erasure selects by those ids, never by searching text for the customer's e-mail or name (see the
 * architecture decisions). Most rows know their subjects where they are written; what a request as a
 * whole concerns (a stored idempotent answer, whatever its selection shows) is gathered here: the code
 * that loads or presents a customer notes its id, and whoever opened the scope reads the set afterwards.
 */
const current = new AsyncLocalStorage<Set<string>>();

/** Runs `work` with a fresh set of noted customer ids, which `touched` holds (also after `work` returns). */
export function withSubjectScope<T>(touched: Set<string>, work: () => T): T {
  return current.run(touched, work);
}

/** Notes that the current request touched this customer (nothing outside a scope). */
export function noteCustomer(customerId: string | null | undefined): void {
  if (customerId) current.getStore()?.add(customerId);
}
