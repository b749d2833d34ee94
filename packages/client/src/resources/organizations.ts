import { type ApiRequester, segment } from '../api.js';
import type { RequestOptions } from '../http.js';
import type {
  Invitation,
  InvitationList,
  InvitationRequest,
  OrganizationList,
  OrganizationSeats,
  PostOptions,
} from '../types.js';

/** `/v1/organizations…`: a customer's organizations, an organization's seats and invitations. */
export class Organizations {
  constructor(private readonly api: ApiRequester) {}

  list(query: { readonly customerId: string }, options?: RequestOptions): Promise<OrganizationList> {
    return this.api.get<OrganizationList>('/v1/organizations', query, options);
  }

  /** Seats used (members plus pending invitations), the plan's limit and the billed quantity. */
  seats(organizationId: string, options?: RequestOptions): Promise<OrganizationSeats> {
    return this.api.get<OrganizationSeats>(
      `/v1/organizations/${segment(organizationId)}/seats`,
      undefined,
      options,
    );
  }

  /** E-mails an invitation; it holds a seat while pending. */
  invite(organizationId: string, body: InvitationRequest, options?: PostOptions): Promise<Invitation> {
    return this.api.post<Invitation>(
      `/v1/organizations/${segment(organizationId)}/invitations`,
      body,
      options,
    );
  }

  invitations(organizationId: string, options?: RequestOptions): Promise<InvitationList> {
    return this.api.get<InvitationList>(
      `/v1/organizations/${segment(organizationId)}/invitations`,
      undefined,
      options,
    );
  }

  /** Revokes a pending invitation (its link stops working, its seat is free). */
  revokeInvitation(
    organizationId: string,
    invitationId: string,
    options?: RequestOptions,
  ): Promise<Invitation> {
    return this.api.delete<Invitation>(
      `/v1/organizations/${segment(organizationId)}/invitations/${segment(invitationId)}`,
      options,
    );
  }
}
