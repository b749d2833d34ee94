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

/** The description of the `appId` argument of the operations the operator may run on any app. */
export const APP_ID_ARG =
  'The app to act on: required with the admin token; an API key or session may leave it out or name its own app';
