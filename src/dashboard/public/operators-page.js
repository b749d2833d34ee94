// The Operators page (owners and the admin token): who may sign in, with which role, and the live
// sessions, each revocable at once.

import { request } from './api.js';
import {
  DashboardAddOperator,
  DashboardChangeOperatorRole,
  DashboardOperators,
  DashboardRemoveOperator,
  DashboardRevokeOperatorSession,
} from './operations.js';
import { ConfirmButton, ErrorMessage, Field, formatDate, html, Loading, useLoad, useSubmit } from './ui.js';
import { useState } from './vendor/hooks.js';

const ROLES = [
  ['owner', 'Owner: everything, manages operators'],
  ['admin', 'Admin: everything but operators'],
  ['viewer', 'Viewer: reads, no secrets, no changes'],
];

function AddOperator({ onAdded }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState('viewer');
  const { busy, errors, error, submit } = useSubmit(async () => {
    await request(DashboardAddOperator, { email: email.trim(), role });
    setEmail('');
    onAdded();
  });
  return html`<form class="card" onSubmit=${submit} novalidate aria-label="Add operator">
    <h2>Add operator</h2>
    <${Field} label="E-mail" error=${errors.email}>
      ${(props) => html`<input ...${props} type="email" value=${email} onInput=${(e) => setEmail(e.currentTarget.value)} />`}
    <//>
    <${Field} label="Role" error=${errors.role}>
      ${(props) => html`<select ...${props} value=${role} onChange=${(e) => setRole(e.currentTarget.value)}>
        ${ROLES.map(([id, label]) => html`<option value=${id}>${label}</option>`)}
      </select>`}
    <//>
    <${ErrorMessage} error=${error} />
    <div class="actions"><button type="submit" disabled=${busy || email.trim() === ''}>Add operator</button></div>
  </form>`;
}

function RoleSelect({ operator, onChanged }) {
  const [error, setError] = useState(undefined);
  const change = async (role) => {
    setError(undefined);
    try {
      await request(DashboardChangeOperatorRole, { id: operator.id, role });
      onChanged();
    } catch (e) {
      setError(e);
      onChanged();
    }
  };
  return html`<span>
    <label class="visually-hidden" for=${`role-${operator.id}`}>Role of ${operator.email}</label>
    <select id=${`role-${operator.id}`} value=${operator.role} onChange=${(e) => change(e.currentTarget.value)}>
      ${ROLES.map(([id]) => html`<option value=${id}>${id}</option>`)}
    </select>
    <${ErrorMessage} error=${error} />
  </span>`;
}

export function OperatorsPage() {
  const loaded = useLoad(() => request(DashboardOperators), []);
  const data = loaded.data;
  const emailOf = (id) => data?.operators.find((o) => o.id === id)?.email ?? id;
  return html`<main>
    <h1>Operators</h1>
    <p class="muted">People who sign in to this dashboard by e-mail. There is always at least one owner.</p>
    ${loaded.loading && !data ? html`<${Loading} what="Loading operators" />` : null}
    <${ErrorMessage} error=${loaded.error} />
    ${
      data
        ? html`<div class="table-wrap"><table>
          <caption class="visually-hidden">Operators</caption>
          <thead><tr><th scope="col">E-mail</th><th scope="col">Role</th><th scope="col">Added</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            ${data.operators.map(
              (operator) => html`<tr key=${operator.id}>
                <td>${operator.email}</td>
                <td><${RoleSelect} operator=${operator} onChanged=${loaded.reload} /></td>
                <td>${formatDate(operator.createdAt)}</td>
                <td><${ConfirmButton} label="Remove" accessibleLabel=${`Remove operator ${operator.email}`}
                  question=${`Remove ${operator.email}? Their sessions end at once.`}
                  confirmLabel="Remove operator"
                  onConfirm=${async () => {
                    await request(DashboardRemoveOperator, { id: operator.id });
                    loaded.reload();
                  }} /></td>
              </tr>`,
            )}
          </tbody>
        </table></div>
        <${AddOperator} onAdded=${loaded.reload} />
        <h2>Sessions</h2>
        ${data.operatorSessions.length === 0 ? html`<p class="empty">Nobody is signed in by e-mail.</p>` : null}
        ${
          data.operatorSessions.length > 0
            ? html`<div class="table-wrap"><table>
              <caption class="visually-hidden">Operator sessions</caption>
              <thead><tr><th scope="col">Operator</th><th scope="col">Signed in</th><th scope="col">Last seen</th><th scope="col">From</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
              <tbody>
                ${data.operatorSessions.map(
                  (session) => html`<tr key=${session.id}>
                    <td>${emailOf(session.operatorId)}${session.current ? ' (this session)' : ''}</td>
                    <td>${formatDate(session.createdAt)}</td>
                    <td>${formatDate(session.lastSeenAt)}</td>
                    <td>${session.ip ?? '—'}</td>
                    <td><${ConfirmButton} label="Revoke" accessibleLabel=${`Revoke session of ${emailOf(session.operatorId)} from ${formatDate(session.createdAt)}`}
                      question="End this session now?" confirmLabel="Revoke session"
                      onConfirm=${async () => {
                        await request(DashboardRevokeOperatorSession, { id: session.id });
                        loaded.reload();
                      }} /></td>
                  </tr>`,
                )}
              </tbody>
            </table></div>`
            : null
        }`
        : null
    }
  </main>`;
}
