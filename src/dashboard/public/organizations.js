// One organization of an app: its seats (used, limit, billed quantity), members and invitations, with
// an invitation form and Revoke for a pending invitation.
import { ApiError, request } from './api.js';
import {
  DashboardInviteToOrganization,
  DashboardOrganization,
  DashboardRevokeInvitation,
} from './operations.js';
import { ConfirmButton, ErrorMessage, Field, formatDate, html, Loading, Notice, useLoad } from './ui.js';
import { useState } from './vendor/hooks.js';

function Seats({ seats }) {
  const limit = seats.limit === null ? 'no limit' : `${seats.limit}`;
  return html`<section class="card" aria-labelledby="seats-title">
    <h2 id="seats-title">Seats</h2>
    <dl class="facts">
      <dt>Used</dt><dd data-seats="used">${seats.used} of ${limit}</dd>
      <dt>Members</dt><dd>${seats.members}</dd>
      <dt>Pending invitations</dt><dd>${seats.pending}</dd>
      <dt>Billed quantity</dt><dd>${seats.quantity ?? '—'}</dd>
    </dl>
    ${seats.overLimit ? html`<p class="warning" role="status">Over the limit: new members are refused until enough leave.</p>` : null}
  </section>`;
}

function Members({ members }) {
  return html`<section class="card" aria-labelledby="members-title">
    <h2 id="members-title">Members</h2>
    <div class="table-wrap"><table>
      <caption class="visually-hidden">Members</caption>
      <thead><tr><th scope="col">E-mail</th><th scope="col">Role</th><th scope="col">Joined</th></tr></thead>
      <tbody>${members.map(
        (m) =>
          html`<tr key=${m.customerId}><td data-label="E-mail">${m.email}</td><td data-label="Role">${m.role}</td><td data-label="Joined">${formatDate(m.createdAt)}</td></tr>`,
      )}</tbody>
    </table></div>
  </section>`;
}

function InviteForm({ appId, organizationId, onInvited }) {
  const [form, setForm] = useState({ email: '', role: 'member', redirectUrl: '' });
  const [errors, setErrors] = useState({});
  const [error, setError] = useState(undefined);
  const [busy, setBusy] = useState(false);
  const text = (field) => (e) => setForm((f) => ({ ...f, [field]: e.currentTarget.value }));
  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    setErrors({});
    setError(undefined);
    try {
      const input = { email: form.email.trim(), role: form.role, redirectUrl: form.redirectUrl.trim() };
      const { inviteToOrganization } = await request(DashboardInviteToOrganization, {
        appId,
        organizationId,
        input,
      });
      setForm((f) => ({ ...f, email: '' }));
      onInvited(inviteToOrganization.email);
    } catch (e) {
      const byField = e instanceof ApiError ? e.fieldErrors() : {};
      if (Object.keys(byField).length > 0) setErrors(byField);
      else setError(e);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="card" onSubmit=${submit} novalidate aria-label="Invite">
    <h3>Invite</h3>
    <${Field} label="E-mail" error=${errors.email}>
      ${(props) => html`<input ...${props} type="email" value=${form.email} onInput=${text('email')} />`}
    <//>
    <${Field} label="Role" error=${errors.role}>
      ${(props) => html`<select ...${props} value=${form.role} onChange=${text('role')}>
        <option value="member">member</option><option value="admin">admin</option><option value="owner">owner</option>
      </select>`}
    <//>
    <${Field} label="Redirect URL" error=${errors.redirectUrl}
      hint="Where the e-mailed link leads: one of the app's allowed callback URLs.">
      ${(props) => html`<input ...${props} type="url" value=${form.redirectUrl} onInput=${text('redirectUrl')} />`}
    <//>
    <${ErrorMessage} error=${error} />
    <div class="actions"><button type="submit" disabled=${busy}>Send invitation</button></div>
  </form>`;
}

function Invitations({ appId, organizationId, invitations, reload }) {
  const [sent, setSent] = useState(undefined);
  const revoke = (invitation) => async () => {
    await request(DashboardRevokeInvitation, { appId, organizationId, invitationId: invitation.id });
    reload();
  };
  return html`<section class="card" aria-labelledby="invitations-title">
    <h2 id="invitations-title">Invitations</h2>
    ${sent ? html`<${Notice}>Invitation sent to ${sent}.<//>` : null}
    ${invitations.length === 0 ? html`<p class="empty">No invitations yet.</p>` : null}
    ${
      invitations.length > 0
        ? html`<div class="table-wrap"><table>
          <caption class="visually-hidden">Invitations</caption>
          <thead><tr><th scope="col">E-mail</th><th scope="col">Role</th><th scope="col">Status</th><th scope="col">Expires</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>${invitations.map(
            (i) => html`<tr key=${i.id}>
              <td data-label="E-mail">${i.email}</td><td data-label="Role">${i.role}</td>
              <td data-label="Status"><span class="status" data-invitation=${i.id}>${i.status}</span></td>
              <td data-label="Expires">${formatDate(i.expiresAt)}</td>
              <td>${
                i.status === 'pending'
                  ? html`<${ConfirmButton} label="Revoke" accessibleLabel=${`Revoke the invitation of ${i.email}`}
                      question=${`Revoke the invitation of ${i.email}? Its link stops working and its seat is free.`}
                      confirmLabel="Revoke invitation" onConfirm=${revoke(i)} />`
                  : null
              }</td>
            </tr>`,
          )}</tbody>
        </table></div>`
        : null
    }
    <${InviteForm} appId=${appId} organizationId=${organizationId} onInvited=${(email) => {
      setSent(email);
      reload();
    }} />
  </section>`;
}

export function OrganizationPage({ appId, organizationId }) {
  const loaded = useLoad(
    () => request(DashboardOrganization, { appId, id: organizationId }),
    [appId, organizationId],
  );
  const back = html`<p><a href=${`#/apps/${encodeURIComponent(appId)}/customers`}>← All customers</a></p>`;
  if (loaded.error) return html`<section>${back}<${ErrorMessage} error=${loaded.error} /></section>`;
  if (!loaded.data) return html`<section>${back}<${Loading} what="Loading the organization" /></section>`;
  const { organization, organizationSeats, organizationInvitations } = loaded.data;
  if (!organization)
    return html`<section>${back}<p class="empty">No organization has the id <code>${organizationId}</code>.</p></section>`;
  return html`<section aria-labelledby="organization-title">
    ${back}
    <h2 id="organization-title">${organization.name}</h2>
    <p class="muted">Organization <code>${organization.id}</code> · created ${formatDate(organization.createdAt)}</p>
    <${Seats} seats=${organizationSeats} />
    <${Members} members=${organization.members} />
    <${Invitations} appId=${appId} organizationId=${organization.id}
      invitations=${organizationInvitations} reload=${loaded.reload} />
  </section>`;
}
