/**
 * GraphQL hands optional arguments that were not sent over as undefined or null; the core's schemas
 * treat absent fields as absent (and apply their defaults), so these are dropped before the call.
 * Not for inputs where null means something (`updateCustomer`'s `name: null` clears the name).
 */
export function sentArgs<T extends object>(args: T): { [K in keyof T]?: NonNullable<T[K]> } {
  return Object.fromEntries(
    Object.entries(args).filter(([, value]) => value !== undefined && value !== null),
  ) as { [K in keyof T]?: NonNullable<T[K]> };
}
