import { noteCustomer } from '../../core/subjects.js';
import type { Metadata } from '../customers/customer.entity.js';
import { presentEntitlements } from '../entitlements/entitlements.presenter.js';
import type { Entitlements } from '../entitlements/entitlements.service.js';
import type { VerifiedLogin } from './magic-links.service.js';
import type { SessionCustomer, SessionView, SwitchedSession } from './sessions.service.js';

/** The customer as a session shows it: `{id, email, name, metadata}`. */
export interface SessionCustomerJson {
  readonly id: string;
  readonly email: string;
  readonly name: string | null;
  readonly metadata: Metadata;
}

/** The interface's Session object; `organizationId` and `orgRole` only in an organization context. */
export interface SessionJson {
  readonly customer: SessionCustomerJson;
  readonly entitlements: Entitlements;
  readonly organizationId?: string;
  readonly orgRole?: string;
}

/** The interface's verify result. */
export interface VerifyResultJson {
  readonly sessionToken: string;
  readonly customer: SessionCustomerJson;
  readonly entitlements: Entitlements;
}

export function presentSessionCustomer(customer: SessionCustomer): SessionCustomerJson {
  noteCustomer(customer.id);
  return { id: customer.id, email: customer.email, name: customer.name, metadata: customer.metadata };
}

export function presentSession(view: SessionView): SessionJson {
  const base = {
    customer: presentSessionCustomer(view.customer),
    entitlements: presentEntitlements(view.entitlements),
  };
  return view.organizationId === undefined
    ? base
    : { ...base, organizationId: view.organizationId, orgRole: view.orgRole };
}

export function presentVerifyResult(login: VerifiedLogin): VerifyResultJson {
  return {
    sessionToken: login.sessionToken,
    customer: presentSessionCustomer(login.customer),
    entitlements: presentEntitlements(login.entitlements),
  };
}

/** `POST …/auth/switch-organization`: the new token beside the session object it stands for. */
export function presentSwitchedSession(switched: SwitchedSession): SessionJson & { sessionToken: string } {
  return {
    sessionToken: switched.sessionToken,
    ...presentSession({
      customer: switched.customer,
      entitlements: switched.entitlements,
      organizationId: switched.organizationId,
      orgRole: switched.orgRole,
    }),
  };
}
