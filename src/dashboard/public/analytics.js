// An app's subscription analytics: the MRR line, the movements as stacked bars, subscriptions by plan
// and the numbers under them, with range, interval and currency pickers; and the overview card on the
// app's home. Charts are inline SVG drawn here (no chart library), each with a text alternative and
// the table of its numbers.
import { request } from './api.js';
import {
  DashboardAnalytics,
  DashboardAnalyticsCurrencies,
  DashboardAnalyticsOverview,
} from './operations.js';
import { ErrorMessage, Field, html, Loading, useLoad } from './ui.js';
import { useState } from './vendor/hooks.js';

const DAY_MS = 86_400_000;
const isoDay = (ms) => new Date(ms).toISOString().slice(0, 10);
const today = () => isoDay(Date.now());

/** The ranges offered, as [id, label, first day]. */
const RANGES = [
  ['30d', 'Last 30 days', () => isoDay(Date.now() - 29 * DAY_MS)],
  ['90d', 'Last 90 days', () => isoDay(Date.now() - 89 * DAY_MS)],
  [
    '12m',
    'Last 12 months',
    () => isoDay(Date.UTC(new Date().getUTCFullYear() - 1, new Date().getUTCMonth() + 1, 1)),
  ],
  ['ytd', 'This year', () => `${new Date().getUTCFullYear()}-01-01`],
];

const INTERVALS = [
  ['day', 'Day'],
  ['week', 'Week'],
  ['month', 'Month'],
];

/** The movement series of the stacked bars: added above the axis, lost below it. */
const MOVEMENTS = [
  ['newMrr', 'New', 1],
  ['expansionMrr', 'Expansion', 1],
  ['reactivationMrr', 'Reactivation', 1],
  ['contractionMrr', 'Contraction', -1],
  ['churnedMrr', 'Churned', -1],
];

/** An amount in the currency's smallest unit, shown in the currency (e.g. 12345 usd → $123.45). */
export function money(amount, currency) {
  if (!currency) return String(amount);
  const format = new Intl.NumberFormat(undefined, { style: 'currency', currency: currency.toUpperCase() });
  const digits = format.resolvedOptions().maximumFractionDigits ?? 2;
  return format.format(amount / 10 ** digits);
}

/** A round upper bound for an axis. */
function niceMax(value) {
  if (value <= 0) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  const step = [1, 2, 2.5, 5, 10].find((s) => s * magnitude >= value);
  return step * magnitude;
}

const WIDTH = 640;
const HEIGHT = 220;
const PAD = { left: 8, right: 8, top: 12, bottom: 24 };

/** The x of the i-th of n points or bars' centres. */
const xOf = (i, n) => PAD.left + (WIDTH - PAD.left - PAD.right) * (n === 1 ? 0.5 : i / (n - 1));

function MrrChart({ periods, currency }) {
  const max = niceMax(Math.max(...periods.map((p) => p.mrr)));
  const y = (v) => PAD.top + (HEIGHT - PAD.top - PAD.bottom) * (1 - v / max);
  const points = periods.map((p, i) => [xOf(i, periods.length), y(p.mrr)]);
  const last = periods.at(-1);
  const summary = `MRR from ${money(periods[0].mrr, currency)} at the end of ${periods[0].start} to ${money(last.mrr, currency)} at the end of the period starting ${last.start}`;
  return html`<figure class="chart">
    <svg viewBox=${`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-labelledby="mrr-chart-title mrr-chart-desc" class="mrr-chart">
      <title id="mrr-chart-title">MRR</title>
      <desc id="mrr-chart-desc">${summary}</desc>
      <line class="axis" x1=${PAD.left} x2=${WIDTH - PAD.right} y1=${y(0)} y2=${y(0)} />
      <text class="tick" x=${PAD.left} y=${PAD.top - 2}>${money(max, currency)}</text>
      <polyline class="line" fill="none" points=${points.map(([px, py]) => `${px.toFixed(1)},${py.toFixed(1)}`).join(' ')} />
      ${periods.map(
        (
          p,
          i,
        ) => html`<circle key=${p.start} class="point" cx=${points[i][0].toFixed(1)} cy=${points[i][1].toFixed(1)} r="3"
          data-start=${p.start} data-mrr=${p.mrr}><title>${`${p.start}: ${money(p.mrr, currency)}`}</title></circle>`,
      )}
      <text class="tick" x=${PAD.left} y=${HEIGHT - 6}>${periods[0].start}</text>
      <text class="tick end" x=${WIDTH - PAD.right} y=${HEIGHT - 6}>${last.start}</text>
    </svg>
  </figure>`;
}

function MovementsChart({ periods, currency }) {
  const up = periods.map((p) => p.newMrr + p.expansionMrr + p.reactivationMrr);
  const down = periods.map((p) => p.contractionMrr + p.churnedMrr);
  const max = niceMax(Math.max(...up, ...down));
  const inner = HEIGHT - PAD.top - PAD.bottom;
  const zero = PAD.top + inner / 2;
  const scale = inner / 2 / max;
  const slot = (WIDTH - PAD.left - PAD.right) / periods.length;
  const barWidth = Math.max(1, slot * 0.7);
  const bars = [];
  periods.forEach((p, i) => {
    const x = PAD.left + slot * i + (slot - barWidth) / 2;
    let above = zero;
    let below = zero;
    for (const [field, label, sign] of MOVEMENTS) {
      const value = p[field];
      if (value === 0) continue;
      const h = value * scale;
      const top = sign > 0 ? above - h : below;
      if (sign > 0) above -= h;
      else below += h;
      bars.push(
        html`<rect key=${`${p.start}-${field}`} class=${`bar ${field}`} x=${x.toFixed(1)} y=${top.toFixed(1)}
          width=${barWidth.toFixed(1)} height=${Math.max(h, 0.5).toFixed(1)} data-start=${p.start} data-field=${field}
          data-value=${value}><title>${`${p.start} ${label}: ${sign < 0 ? '−' : ''}${money(value, currency)}`}</title></rect>`,
      );
    }
  });
  const totals = MOVEMENTS.map(
    ([field, label]) =>
      `${label} ${money(
        periods.reduce((s, p) => s + p[field], 0),
        currency,
      )}`,
  );
  return html`<figure class="chart">
    <svg viewBox=${`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-labelledby="movements-chart-title movements-chart-desc" class="movements-chart">
      <title id="movements-chart-title">MRR movements</title>
      <desc id="movements-chart-desc">${`Over the range: ${totals.join(', ')}.`}</desc>
      <line class="axis" x1=${PAD.left} x2=${WIDTH - PAD.right} y1=${zero} y2=${zero} />
      <text class="tick" x=${PAD.left} y=${PAD.top - 2}>${`+${money(max, currency)}`}</text>
      <text class="tick" x=${PAD.left} y=${HEIGHT - 6}>${`−${money(max, currency)}`}</text>
      ${bars}
    </svg>
    <figcaption>
      <ul class="legend">
        ${MOVEMENTS.map(([field, label]) => html`<li key=${field}><span class=${`swatch ${field}`} aria-hidden="true"></span>${label}</li>`)}
      </ul>
    </figcaption>
  </figure>`;
}

function PlansChart({ byPlan, currency }) {
  if (byPlan.length === 0) return html`<p class="empty">No plan has MRR at the end of the range.</p>`;
  const max = Math.max(...byPlan.map((p) => p.mrr), 1);
  const rowHeight = 28;
  const height = byPlan.length * rowHeight;
  return html`<figure class="chart">
    <svg viewBox=${`0 0 ${WIDTH} ${height}`} role="img" aria-labelledby="plans-chart-title" class="plans-chart">
      <title id="plans-chart-title">${`MRR by plan: ${byPlan.map((p) => `${p.planId} ${money(p.mrr, currency)}`).join(', ')}`}</title>
      ${byPlan.map(
        (p, i) => html`<g key=${p.planId}>
          <rect class="bar plan" x="160" y=${i * rowHeight + 4} width=${((WIDTH - 170) * p.mrr) / max} height=${rowHeight - 8}
            data-plan=${p.planId} data-mrr=${p.mrr} />
          <text class="tick" x="0" y=${i * rowHeight + rowHeight / 2 + 4}>${p.planId}</text>
        </g>`,
      )}
    </svg>
  </figure>`;
}

function PeriodsTable({ periods, currency }) {
  return html`<div class="table-wrap"><table class="numbers">
    <caption class="visually-hidden">MRR and movements by period</caption>
    <thead><tr>
      <th scope="col">Period from</th><th scope="col">MRR</th><th scope="col">Active</th><th scope="col">Trialing</th>
      <th scope="col">New</th><th scope="col">Expansion</th><th scope="col">Contraction</th><th scope="col">Churned</th>
      <th scope="col">Reactivation</th><th scope="col">New subs</th><th scope="col">Canceled</th><th scope="col">Trial conversions</th>
    </tr></thead>
    <tbody>
      ${periods.map(
        (p) => html`<tr key=${p.start} data-start=${p.start}>
          <th scope="row">${p.start}</th>
          <td data-label="MRR">${money(p.mrr, currency)}</td><td data-label="Active">${p.activeSubscriptions}</td><td data-label="Trialing">${p.trialingSubscriptions}</td>
          <td data-label="New">${money(p.newMrr, currency)}</td><td data-label="Expansion">${money(p.expansionMrr, currency)}</td>
          <td data-label="Contraction">${money(p.contractionMrr, currency)}</td><td data-label="Churned">${money(p.churnedMrr, currency)}</td>
          <td data-label="Reactivation">${money(p.reactivationMrr, currency)}</td><td data-label="New subs">${p.newSubscriptions}</td>
          <td data-label="Canceled">${p.canceledSubscriptions}</td><td data-label="Trial conversions">${p.trialConversions}</td>
        </tr>`,
      )}
    </tbody>
  </table></div>`;
}

function Figure({ label, value }) {
  return html`<div class="figure"><dt>${label}</dt><dd>${value}</dd></div>`;
}

export function AnalyticsTab({ appId }) {
  const [range, setRange] = useState('12m');
  const [interval, setInterval] = useState('month');
  const [chosen, setChosen] = useState(undefined);
  const currencies = useLoad(() => request(DashboardAnalyticsCurrencies, { appId }), [appId]);
  const list = currencies.data?.analyticsCurrencies;
  const currency = chosen ?? list?.[0];
  const from = RANGES.find(([id]) => id === range)[2]();
  const loaded = useLoad(
    () =>
      list === undefined
        ? Promise.resolve(undefined)
        : request(DashboardAnalytics, {
            appId,
            from,
            to: today(),
            interval,
            ...(currency ? { currency } : {}),
          }),
    [appId, range, interval, currency, list === undefined],
  );
  const data = loaded.data?.analytics;
  const last = data?.periods.at(-1);
  return html`<section class="card analytics" aria-labelledby="analytics-title">
    <h2 id="analytics-title">Analytics</h2>
    <form class="pickers" onSubmit=${(e) => e.preventDefault()}>
      <${Field} label="Range">
        ${(p) => html`<select ...${p} value=${range} onChange=${(e) => setRange(e.currentTarget.value)}>
          ${RANGES.map(([id, label]) => html`<option value=${id}>${label}</option>`)}
        </select>`}
      <//>
      <${Field} label="Interval">
        ${(p) => html`<select ...${p} value=${interval} onChange=${(e) => setInterval(e.currentTarget.value)}>
          ${INTERVALS.map(([id, label]) => html`<option value=${id}>${label}</option>`)}
        </select>`}
      <//>
      ${
        list && list.length > 1
          ? html`<${Field} label="Currency">
            ${(
              p,
            ) => html`<select ...${p} value=${currency} onChange=${(e) => setChosen(e.currentTarget.value)}>
              ${list.map((c) => html`<option value=${c}>${c.toUpperCase()}</option>`)}
            </select>`}
          <//>`
          : null
      }
    </form>
    <${ErrorMessage} error=${currencies.error ?? loaded.error} />
    ${!data ? html`<${Loading} what="Loading analytics" />` : null}
    ${
      data
        ? html`
          <dl class="figures">
            <${Figure} label="MRR" value=${money(last.mrr, data.currency)} />
            <${Figure} label="Active subscriptions" value=${last.activeSubscriptions} />
            <${Figure} label="Trialing" value=${last.trialingSubscriptions} />
            <${Figure} label="Churned MRR" value=${money(data.totals.churnedMrr, data.currency)} />
            <${Figure} label="Trial conversions" value=${data.totals.trialConversions} />
          </dl>
          ${data.currency === null ? html`<p class="empty">No subscription has counted towards MRR yet.</p>` : null}
          <h3>MRR</h3>
          <${MrrChart} periods=${data.periods} currency=${data.currency} />
          <h3>Movements</h3>
          <${MovementsChart} periods=${data.periods} currency=${data.currency} />
          <h3>Subscriptions by plan</h3>
          <${PlansChart} byPlan=${data.byPlan} currency=${data.currency} />
          <div class="table-wrap"><table class="by-plan">
            <caption class="visually-hidden">MRR and active subscriptions by plan</caption>
            <thead><tr><th scope="col">Plan</th><th scope="col">MRR</th><th scope="col">Active subscriptions</th></tr></thead>
            <tbody>
              ${data.byPlan.map(
                (p) =>
                  html`<tr key=${p.planId}><th scope="row">${p.planId}</th><td data-label="MRR">${money(p.mrr, data.currency)}</td><td data-label="Active subscriptions">${p.activeSubscriptions}</td></tr>`,
              )}
            </tbody>
          </table></div>
          <h3>The numbers</h3>
          <${PeriodsTable} periods=${data.periods} currency=${data.currency} />`
        : null
    }
  </section>`;
}

/** The app home's card: MRR and active subscriptions now, in each currency. */
export function AnalyticsOverview({ appId }) {
  const loaded = useLoad(async () => {
    const { analyticsCurrencies } = await request(DashboardAnalyticsCurrencies, { appId });
    const day = today();
    return Promise.all(
      analyticsCurrencies.map(async (currency) => {
        const { analytics } = await request(DashboardAnalyticsOverview, {
          appId,
          from: day,
          to: day,
          currency,
        });
        return { currency, ...analytics.periods[0] };
      }),
    );
  }, [appId]);
  return html`<section class="card overview" aria-labelledby="overview-title">
    <h2 id="overview-title">Overview</h2>
    <${ErrorMessage} error=${loaded.error} />
    ${!loaded.data && !loaded.error ? html`<${Loading} what="Loading the overview" />` : null}
    ${loaded.data && loaded.data.length === 0 ? html`<p class="empty">No subscription has counted towards MRR yet.</p>` : null}
    ${
      loaded.data && loaded.data.length > 0
        ? html`<dl class="figures">
          ${loaded.data.map(
            (
              row,
            ) => html`<${Figure} key=${`m-${row.currency}`} label=${`MRR (${row.currency.toUpperCase()})`} value=${money(row.mrr, row.currency)} />
              <${Figure} key=${`a-${row.currency}`} label=${`Active subscriptions (${row.currency.toUpperCase()})`} value=${row.activeSubscriptions} />`,
          )}
        </dl>
        <p><a href=${`#/apps/${encodeURIComponent(appId)}/analytics`}>See the analytics</a></p>`
        : null
    }
  </section>`;
}
