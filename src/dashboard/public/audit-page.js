// The Audit log page: every write by an operator, an API key or the admin token, newest first, with
// filters by actor, action, target and time.

import { request } from './api.js';
import { DashboardAuditEvents } from './operations.js';
import { ErrorMessage, Field, formatDate, html, Loading } from './ui.js';
import { useEffect, useRef, useState } from './vendor/hooks.js';

const PAGE_SIZE = 50;
const EMPTY = { actorId: '', action: '', targetId: '', since: '', until: '' };

/** The filter form's values as the query's variables (blank ones left out; dates as UTC instants). */
function variablesOf(filters) {
  const variables = { first: PAGE_SIZE };
  for (const key of ['actorId', 'action', 'targetId']) {
    if (filters[key].trim() !== '') variables[key] = filters[key].trim();
  }
  if (filters.since) variables.since = new Date(`${filters.since}T00:00:00Z`).toISOString();
  if (filters.until) variables.until = new Date(`${filters.until}T23:59:59.999Z`).toISOString();
  return variables;
}

function actorOf(actor) {
  if (actor.type === 'operator') return actor.email;
  if (actor.type === 'api_key') return `API key ${actor.id}`;
  return 'Admin token';
}

function Changes({ changes }) {
  const fields = Object.entries(changes);
  if (fields.length === 0) return html`<span class="muted">—</span>`;
  const show = (value) => (value === null ? '∅' : typeof value === 'string' ? value : JSON.stringify(value));
  return html`<ul class="changes">
    ${fields.map(([field, { before, after }]) => html`<li key=${field}><code>${field}</code>: ${show(before)} → ${show(after)}</li>`)}
  </ul>`;
}

export function AuditPage() {
  const [form, setForm] = useState(EMPTY);
  const [filters, setFilters] = useState(EMPTY);
  const [events, setEvents] = useState([]);
  const [page, setPage] = useState({ hasNextPage: false, endCursor: null });
  const [error, setError] = useState(undefined);
  // What is loading: a search ('search', the rows shown are the previous search's) or the next page.
  const [loading, setLoading] = useState('search');
  // Only the latest load may change the page: an older search answering late would show rows that do
  // not match the filters, and a next page of the previous search would be appended to the new one.
  const generation = useRef(0);

  const load = async (after) => {
    const mine = ++generation.current;
    setLoading(after ? 'more' : 'search');
    setError(undefined);
    try {
      const { auditEvents } = await request(DashboardAuditEvents, { ...variablesOf(filters), after });
      if (mine !== generation.current) return;
      const nodes = auditEvents.edges.map((edge) => edge.node);
      setEvents((shown) => (after ? [...shown, ...nodes] : nodes));
      setPage(auditEvents.pageInfo);
    } catch (e) {
      if (mine === generation.current) setError(e);
    } finally {
      if (mine === generation.current) setLoading(undefined);
    }
  };
  useEffect(() => {
    load(undefined);
  }, [filters]);

  const field = (key, label, type = 'text') => html`<${Field} label=${label}>
    ${(props) => html`<input ...${props} type=${type} value=${form[key]}
      onInput=${(e) => setForm({ ...form, [key]: e.currentTarget.value })} />`}
  <//>`;

  return html`<main>
    <h1>Audit log</h1>
    <p class="muted">Every change made by an operator, an API key or the admin token, newest first.</p>
    <form class="filters" role="search" aria-label="Filter the audit log"
      onSubmit=${(e) => {
        e.preventDefault();
        setFilters(form);
      }}>
      ${field('actorId', 'Actor (operator or API key id)')}
      ${field('action', 'Action (e.g. customer.update)')}
      ${field('targetId', 'Target id')}
      ${field('since', 'From', 'date')}
      ${field('until', 'To', 'date')}
      <div class="actions"><button type="submit">Search</button></div>
    </form>
    <${ErrorMessage} error=${error} />
    ${loading && events.length === 0 ? html`<${Loading} what="Loading the audit log" />` : null}
    ${loading === 'search' && events.length > 0 ? html`<${Loading} what="Searching the audit log" />` : null}
    ${!loading && events.length === 0 && !error ? html`<p class="empty">No matching events.</p>` : null}
    ${
      events.length > 0
        ? html`<div class=${`table-wrap${loading === 'search' ? ' stale' : ''}`} aria-busy=${loading === 'search' ? 'true' : 'false'}><table>
          <caption class="visually-hidden">Audit events</caption>
          <thead><tr><th scope="col">Time</th><th scope="col">Actor</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">App</th><th scope="col">Changes</th><th scope="col">From</th></tr></thead>
          <tbody>
            ${events.map(
              (event) => html`<tr key=${event.id}>
                <td>${formatDate(event.at)}</td>
                <td>${actorOf(event.actor)}</td>
                <td><code>${event.action}</code></td>
                <td>${event.targetId ? html`<code>${event.targetId}</code>` : '—'}</td>
                <td>${event.appId ? html`<code>${event.appId}</code>` : '—'}</td>
                <td><${Changes} changes=${event.changes} /></td>
                <td>${event.ip ?? '—'}</td>
              </tr>`,
            )}
          </tbody>
        </table></div>`
        : null
    }
    ${page.hasNextPage ? html`<button type="button" class="secondary" disabled=${loading !== undefined} onClick=${() => load(page.endCursor)}>Load more</button>` : null}
  </main>`;
}
