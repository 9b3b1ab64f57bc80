import { planCounts, plans } from './plans-template';

/*
 * The console's Eta templates (https://eta.js.org), kept in a TypeScript module so that the build carries them
 * into dist/ with the code. `it` is the page's data, `it.h` the helpers of console-views.ts. `<%= %>` escapes.
 */

const layout = String.raw`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title><%= it.title %> · Billing console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/assets/console.css">
<% if (it.refresh) { %>
<meta http-equiv="refresh" content="0; url=<%= it.refresh %>">
<% } %>
<% if (it.chart) { %>
<script src="/console/assets/chart.umd.min.js" defer></script>
<script src="/console/assets/console.js" defer></script>
<% } %>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/console">Billing console</a>
<% if (it.operator) { %>
  <nav aria-label="Console">
    <ul>
<% for (const item of it.h.nav) { %>
      <li><a href="<%= item.href %>"<% if (item.section === it.section) { %> aria-current="page"<% } %>><%= item.label %></a></li>
<% } %>
    </ul>
  </nav>
  <form class="sign-out" method="post" action="/console/sign-out">
    <input type="hidden" name="_csrf" value="<%= it.operator.csrfToken %>">
    <span class="who"><%= it.operator.email %></span>
    <button type="submit">Sign out</button>
  </form>
<% } %>
</header>
<main id="main" tabindex="-1">
<h1><%= it.title %></h1>
<% if (it.flash) { %>
<div class="flash flash-<%= it.flash.kind %>" role="<%= it.flash.kind === 'refused' ? 'alert' : 'status' %>"><%= it.flash.text %></div>
<% } %>
<%~ it.body %>
</main>
</body>
</html>
`;

const signIn = String.raw`<% layout('@layout') %>
<% if (it.problem) { %>
<p class="flash flash-refused" role="alert"><%= it.problem %></p>
<% } %>
<% if (it.provider) { %>
<p>The console is for the people who run this service. Sign in with your company account:</p>
<p><a class="button primary" href="/console/oidc/start">Sign in with <%= it.provider %></a></p>
<p>You stay signed in for 12 hours. Without access to the provider, a one-time link from a machine with access
to the service's configuration works too:</p>
<pre><code>npm run -s cli -- console:link --email you@example.com</code></pre>
<% } else { %>
<p>The console is for the people who run this service. To sign in, ask for a one-time link on a machine
with access to the service's configuration:</p>
<pre><code>npm run -s cli -- console:link --email you@example.com</code></pre>
<p>The link works once, for 15 minutes unless <code>--ttl-minutes</code> says otherwise, and keeps you signed in for 12 hours.</p>
<% } %>
`;

// After the OpenID provider's callback: moves on to the console by itself (a meta refresh; CSP allows no script).
const signedIn = String.raw`<% layout('@layout') %>
<p>You are signed in. <a href="/console">Continue to the console</a>.</p>
`;

// After signing out of a session made through the OpenID provider: moves on to the provider's end-session
// endpoint by itself (a meta refresh: form-action 'self' would block a redirect after the sign-out's form post).
const signedOut = String.raw`<% layout('@layout') %>
<p>You are signed out of the console. <a href="<%= it.refresh %>">Sign out at <%= it.provider %> too</a>.</p>
`;

const link = String.raw`<% layout('@layout') %>
<p>This one-time link signs you in to the billing console. It works once.</p>
<form method="post" action="/console/sign-in/link">
  <input type="hidden" name="token" value="<%= it.token %>">
  <button type="submit" class="primary">Sign in</button>
</form>
`;

const error = String.raw`<% layout('@layout') %>
<p class="flash flash-refused" role="alert"><%= it.message %></p>
<% if (it.requestId) { %><p>Request id: <code><%= it.requestId %></code></p><% } %>
<p><a href="/console">Back to the overview</a></p>
`;

const overview = String.raw`<% layout('@layout') %>
<section aria-labelledby="orgs-heading">
  <h2 id="orgs-heading">Organisations</h2>
  <div class="cards">
    <div class="card"><span class="figure"><%= it.h.num(it.o.organisations) %></span> organisations</div>
<% for (const row of it.o.byTier) { %>
    <div class="card"><span class="figure"><%= it.h.num(row.count) %></span> on <%= row.tier %></div>
<% } %>
  </div>
  <h3>Subscriptions by status</h3>
<% if (it.o.byStatus.length) { %>
  <table class="stack"><thead><tr><th scope="col">Status</th><th scope="col" class="num">Subscriptions</th></tr></thead><tbody>
<% for (const row of it.o.byStatus) { %>
    <tr><td data-label="Status"><span class="badge badge-<%= row.status %>"><%= row.status %></span></td><td data-label="Subscriptions" class="num"><%= it.h.num(row.count) %></td></tr>
<% } %>
  </tbody></table>
<% } else { %><p>No subscriptions yet.</p><% } %>
</section>
<section aria-labelledby="day-heading">
  <h2 id="day-heading">The last 24 hours</h2>
  <div class="cards">
    <div class="card"><span class="figure"><%= it.h.num(it.o.events) %></span> webhook events</div>
    <div class="card"><a href="/console/events?status=failed"><span class="figure"><%= it.h.num(it.o.failed) %></span> failed</a></div>
    <div class="card"><a href="/console/events?status=unmatched"><span class="figure"><%= it.h.num(it.o.unmatched) %></span> unmatched</a></div>
    <div class="card"><a href="/console/notifications?status=pending"><span class="figure"><%= it.h.num(it.o.pendingNotifications) %></span> notifications pending</a></div>
    <div class="card"><a href="/console/notifications?status=failed"><span class="figure"><%= it.h.num(it.o.failedNotifications) %></span> notifications failed</a></div>
  </div>
  <figure class="chart">
    <div class="chart-box">
      <canvas id="events-chart" role="img" aria-label="Webhook events per hour over the last 24 hours, by outcome; the same figures are in the table below" data-chart="<%= JSON.stringify(it.o.chart) %>"></canvas>
    </div>
    <figcaption>Webhook events per hour (UTC), by outcome</figcaption>
  </figure>
  <details>
    <summary>The chart's figures</summary>
    <table class="stack"><thead><tr><th scope="col">Hour</th>
<% for (const series of it.o.chart.series) { %><th scope="col" class="num"><%= series.label %></th><% } %>
    </tr></thead><tbody>
<% it.o.chart.hours.forEach((hour, i) => { %>
      <tr><td data-label="Hour"><%= hour %></td><% for (const series of it.o.chart.series) { %><td data-label="<%= series.label %>" class="num"><%= it.h.num(series.data[i]) %></td><% } %></tr>
<% }) %>
    </tbody></table>
  </details>
</section>
`;


// A POST button: the CSRF token, where to come back to, and a label that names what it acts on.
const action = String.raw`<form class="inline" method="post" action="<%= it.action %>">
<input type="hidden" name="_csrf" value="<%= it.csrf %>">
<% if (it.back) { %><input type="hidden" name="back" value="<%= it.back %>"><% } %>
<button type="submit"<% if (it.label) { %> aria-label="<%= it.label %>"<% } %>><%= it.text %></button>
</form>`;

// An organisation by its name, linked, with its id beneath (copyable); `id` alone when it no longer exists.
const organisationRef = String.raw`<% if (it.name) { %><a href="/console/organisations/<%= it.id %>"><%= it.name %></a><br><% } %><code class="id"><%= it.id %></code>`;

// What an audited change changed: each field before → after (a created thing's fields, a removed one's → —).
const changes = String.raw`<% if (!it.changes.length) { %><span class="muted">nothing recorded</span><% } else { %><ul class="changes">
<% for (const c of it.changes) { %>  <li><span class="field"><%= c.field %></span>: <% if (c.before === null) { %><%~ it.h.value(c.after) %><% } else { %><span class="was"><%~ it.h.value(c.before) %></span> → <%~ c.after === null ? '—' : it.h.value(c.after) %><% } %></li>
<% } %></ul><% } %>`;

const eventsTable = String.raw`<% if (!it.rows.length) { %><p>No webhook events<%= it.empty || '' %>.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Webhook events" tabindex="0">
<table class="stack">
<thead><tr><th scope="col">Received</th><th scope="col">Event</th><% if (it.showOrganisation) { %><th scope="col">Organisation</th><% } %><th scope="col">Status</th><th scope="col">Reason</th><th scope="col"><span class="sr-only">Action</span></th></tr></thead>
<tbody>
<% for (const e of it.rows) { %>
<tr>
  <td data-label="Received"><%= it.h.when(e.receivedAt) %></td>
  <td data-label="Event"><%= it.h.eventWords(e.type) %><br><a href="/console/events/<%= encodeURIComponent(e.id) %>"><code><%= e.id %></code></a></td>
<% if (it.showOrganisation) { %>  <td data-label="Organisation"><% if (e.organisationId) { %><%~ include('@organisationRef', { id: e.organisationId, name: e.organisationName }) %><% } else { %><span class="muted">none matched</span><% } %></td>
<% } %>
  <td data-label="Status"><span class="badge badge-<%= e.status %>"><%= e.status %></span></td>
  <td data-label="Reason"><%= e.reason || '—' %></td>
  <td data-label="Action"><% if (it.replayable.includes(e.status)) { %><%~ include('@action', { action: '/console/events/' + encodeURIComponent(e.id) + '/replay', csrf: it.csrf, back: it.back, text: 'Replay', label: 'Replay event ' + e.id }) %><% } %></td>
</tr>
<% } %>
</tbody>
</table>
</div>
<% } %>`;

const auditTable = String.raw`<% if (!it.rows.length) { %><p>No audit entries.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Audit entries" tabindex="0">
<table class="stack">
<thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Action</th><% if (it.showOrganisation) { %><th scope="col">Organisation</th><% } %><th scope="col">What changed</th></tr></thead>
<tbody>
<% for (const a of it.rows) { %>
<tr id="audit-<%= a.id %>">
  <td data-label="When"><a href="/console/audit/<%= a.id %>"><%= it.h.when(a.at) %></a></td>
  <td data-label="Who"><%~ it.h.email(a.actor.text) %><% if (a.actor.id) { %><br><code class="id"><%= a.actor.id %></code><% } %></td>
  <td data-label="Action"><%= a.action %></td>
<% if (it.showOrganisation) { %>  <td data-label="Organisation"><% if (a.organisation) { %><%~ include('@organisationRef', a.organisation) %><% } else { %><span class="muted">—</span><% } %></td>
<% } %>
  <td data-label="What changed"><%~ include('@changes', { changes: a.changes, h: it.h }) %></td>
</tr>
<% } %>
</tbody>
</table>
</div>
<% } %>`;

const organisations = String.raw`<% layout('@layout') %>
<form class="filters" method="get" action="/console/organisations" role="search">
  <label for="q">Part of a name or member email, or an exact id, external id, customer id or subscription id
    <input type="search" id="q" name="q" value="<%= it.q %>" maxlength="200" autocomplete="off">
  </label>
  <button type="submit" class="primary">Search</button>
</form>
<% if (!it.rows.length) { %><p>No organisation matches<%= it.q ? ' “' + it.q + '”' : '' %>.<% if (it.q && it.q.trim().length < it.partialMin) { %> Type at least <%= it.partialMin %> characters to search by part of a name or email.<% } %></p><% } else { %>
<div class="table-wrap" role="region" aria-label="Organisations" tabindex="0">
<table class="stack">
<thead><tr><th scope="col">Name</th><th scope="col">Id</th><th scope="col">External id</th><th scope="col">Customer</th><th scope="col">Created</th></tr></thead>
<tbody>
<% for (const o of it.rows) { %>
<tr>
  <td data-label="Name"><a href="/console/organisations/<%= o.id %>"><%= o.name %></a><% if (o.matchedEmails && o.matchedEmails.length) { %><br><span class="muted">member <%~ o.matchedEmails.map(it.h.email).join(', ') %></span><% } %></td>
  <td data-label="Id"><code class="id"><%= o.id %></code></td>
  <td data-label="External id"><%= o.externalId || '—' %></td>
  <td data-label="Customer"><%= o.customerId || '—' %></td>
  <td data-label="Created"><%= it.h.day(o.createdAt) %></td>
</tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
<nav class="pager" aria-label="Pages">
<% if (it.after) { %><a href="/console/organisations<%= it.h.params({ q: it.q }) %>">First page</a><% } %>
<% if (it.next) { %><a href="/console/organisations<%= it.h.params({ q: it.q, after: it.next }) %>">Next page</a><% } %>
</nav>
`;

const organisation = String.raw`<% layout('@layout') %>
<% const o = it.d.organisation, s = it.d.status, ent = it.d.entitlements; %>
<dl class="facts">
  <dt>Id</dt><dd><code class="id"><%= o.id %></code></dd>
  <dt>External id</dt><dd><%= o.externalId || '—' %></dd>
  <dt>Provider customer</dt><dd><%= o.customerId || '—' %></dd>
  <dt>Created</dt><dd><%= it.h.when(o.createdAt) %></dd>
</dl>
<section aria-labelledby="license-heading">
<h2 id="license-heading">License</h2>
<dl class="facts">
  <dt>Tier</dt><dd><strong id="license-tier"><%= s.license.tier %></strong></dd>
  <dt>Active</dt><dd><%= s.license.is_active ? 'yes' : 'no' %></dd>
  <dt>Expired</dt><dd><%= s.license.is_expired ? 'yes' : 'no' %></dd>
</dl>
<h3 id="why-heading">Why it has this license</h3>
<ol class="timeline" aria-labelledby="why-heading">
<% for (const step of it.d.timeline) { %>
  <li><% if (step.when) { %><span class="when"><%= step.when %></span> <% } %><%= step.text %><% if (step.link) { %> <a href="<%= step.link.href %>"><%= step.link.label %></a><% } %></li>
<% } %>
</ol>
<h3>Usage</h3>
<dl class="facts">
<% for (const [metric, u] of Object.entries(s.usage)) { %>
  <dt id="usage-<%= metric %>"><%= metric %></dt>
  <dd><meter class="bar" min="0" max="<%= Math.max(u.limit, 1) %>" value="<%= Math.min(u.used, Math.max(u.limit, 1)) %>" aria-labelledby="usage-<%= metric %>"></meter>
      <%= it.h.num(u.used) %> of <%= it.h.num(u.limit) %> (<%= it.h.percent(u.used, u.limit) %>)<%= u.at_capacity ? ', at capacity' : '' %></dd>
<% } %>
</dl>
</section>
<section aria-labelledby="entitlements-heading">
<h2 id="entitlements-heading">Entitlements</h2>
<dl class="facts">
<% for (const [feature, on] of Object.entries(ent.features)) { const ov = it.d.overridden.get(feature); %>
  <dt><%= feature %></dt><dd><%= on ? 'on' : 'off' %><% if (ov) { %> <span class="badge badge-override">override</span> <span class="muted"><%= ov.expires_at ? 'until ' + it.h.day(ov.expires_at) : 'with no end' %></span><% } %></dd>
<% } %>
<% for (const [metric, l] of Object.entries(ent.limits)) { const ov = it.d.overridden.get(metric); %>
  <dt><%= metric %> limit</dt><dd><%= it.h.num(l.limit) %><% if (ov) { %> <span class="badge badge-override">override</span> <span class="muted"><%= ov.expires_at ? 'until ' + it.h.day(ov.expires_at) : 'with no end' %></span><% } else { %> <span class="muted">(from the <%= l.source === 'seats' ? 'seats' : 'tier' %>)</span><% } %>; beyond it: <%= l.overage === 'bill' ? 'billed' : 'refused' %></dd>
<% } %>
</dl>
<h3>Overrides</h3>
<% if (!it.d.overrides.length) { %><p>No overrides.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Overrides" tabindex="0">
<table class="stack">
<thead><tr><th scope="col">Name</th><th scope="col">Value</th><th scope="col">Expires</th><th scope="col">Note</th><th scope="col"><span class="sr-only">Action</span></th></tr></thead>
<tbody>
<% for (const ov of it.d.overrides) { %>
<tr><td data-label="Name"><%= ov.name %></td><td data-label="Value"><%= typeof ov.value === 'boolean' ? (ov.value ? 'on' : 'off') : it.h.num(ov.value) %></td><td data-label="Expires"><%= ov.expires_at ? it.h.when(ov.expires_at) : 'never' %></td><td data-label="Note"><%= ov.note || '—' %></td>
<td data-label="Action"><%~ include('@action', { action: '/console/organisations/' + o.id + '/overrides/' + encodeURIComponent(ov.name) + '/delete', csrf: it.operator.csrfToken, text: 'Remove', label: 'Remove the override of ' + ov.name }) %></td></tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
<form class="filters" method="post" action="/console/organisations/<%= o.id %>/overrides">
  <input type="hidden" name="_csrf" value="<%= it.operator.csrfToken %>">
  <label for="ov-name">Feature or metric
    <select id="ov-name" name="name">
<% for (const name of [...Object.keys(ent.features), ...Object.keys(ent.limits)]) { %>      <option><%= name %></option>
<% } %>
    </select>
  </label>
  <label for="ov-value">Value (true, false or a limit)<input id="ov-value" name="value" required maxlength="20"></label>
  <label for="ov-expires">Expires (UTC, optional)<input id="ov-expires" name="expires_at" type="datetime-local"></label>
  <label for="ov-note">Note<input id="ov-note" name="note" maxlength="500"></label>
  <button type="submit" class="primary">Set override</button>
</form>
</section>
<section aria-labelledby="credits-heading">
<h2 id="credits-heading">Credits</h2>
<% if (!it.d.credits.length) { %><p>Its tier sells no metric as credits: a grant given now counts once its tier (or an override) does.</p><% } %>
<% for (const c of it.d.credits) { %>
<h3 id="credits-<%= c.metric %>"><%= c.metric %></h3>
<dl class="facts" aria-labelledby="credits-<%= c.metric %>">
  <dt>Included this period</dt><dd><%= it.h.num(c.included.used) %> of <%= it.h.num(c.included.limit) %> used, <%= it.h.num(c.included.remaining) %> left</dd>
  <dt>Balance</dt><dd><%= it.h.num(c.balance) %></dd>
  <dt>Reserved</dt><dd><%= it.h.num(c.reserved) %></dd>
  <dt>Available</dt><dd><strong><%= it.h.num(c.available) %></strong></dd>
  <dt>Automatic top-up</dt><dd><% if (!c.auto_recharge) { %>off<% } else { const a = c.auto_recharge; %><%= a.enabled ? 'on' : 'off' %>: pack <%= a.pack %> below <%= it.h.num(a.threshold) %>, at most <%= a.monthly_limit %> a month (<%= a.recharges_this_month %> this month)<%= a.last_error ? '; last error: ' + a.last_error : '' %><% } %></dd>
</dl>
<% if (!c.grants.length) { %><p>No grants that count.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Grants of <%= c.metric %>, in the order they are drawn on" tabindex="0">
<table class="stack">
<thead><tr><th scope="col">Grant</th><th scope="col">Remaining</th><th scope="col">Category</th><th scope="col">Source</th><th scope="col">Priority</th><th scope="col">Expires</th><th scope="col">Note</th><th scope="col"><span class="sr-only">Action</span></th></tr></thead>
<tbody>
<% for (const g of c.grants) { %>
<tr><td data-label="Grant"><code class="id"><%= g.id %></code></td><td data-label="Remaining"><%= it.h.num(g.remaining) %> of <%= it.h.num(g.amount) %></td><td data-label="Category"><%= g.category %></td><td data-label="Source"><%= g.source %></td><td data-label="Priority"><%= g.priority %></td><td data-label="Expires"><%= g.expires_at ? it.h.when(g.expires_at) : 'never' %></td><td data-label="Note"><%= g.note || '—' %></td>
<td data-label="Action"><%~ include('@action', { action: '/console/organisations/' + o.id + '/credits/grants/' + g.id + '/void', csrf: it.operator.csrfToken, text: 'Void', label: 'Void grant ' + g.id + ' (' + g.remaining + ' ' + c.metric + ' left)' }) %></td></tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
<% } %>
<h3>Give a grant</h3>
<form class="filters" method="post" action="/console/organisations/<%= o.id %>/credits/grants">
  <input type="hidden" name="_csrf" value="<%= it.operator.csrfToken %>">
  <input type="hidden" name="idempotency_key" value="<%= it.d.grantKey %>">
  <label for="grant-metric">Metric to grant
    <select id="grant-metric" name="metric">
<% for (const m of it.d.creditMetrics) { %>      <option><%= m %></option>
<% } %>
    </select>
  </label>
  <label for="grant-amount">Amount to grant<input id="grant-amount" name="amount" required inputmode="numeric" pattern="[0-9]+" maxlength="13"></label>
  <label for="grant-category">Category
    <select id="grant-category" name="category"><option>promotional</option><option>paid</option></select>
  </label>
  <label for="grant-priority">Priority (1–100, lower first)<input id="grant-priority" name="priority" inputmode="numeric" pattern="[0-9]+" maxlength="3" placeholder="50"></label>
  <label for="grant-expires">Valid until (UTC; empty: never)<input id="grant-expires" name="expires_at" type="datetime-local"></label>
  <label for="grant-note">Reason for the grant<input id="grant-note" name="note" maxlength="500"></label>
  <button type="submit" class="primary">Give grant</button>
</form>
<h3 id="ledger-heading">Latest ledger entries</h3>
<% if (!it.d.creditLedger.length) { %><p>No ledger entries.</p><% } else { %>
<div class="table-wrap" role="region" aria-labelledby="ledger-heading" tabindex="0">
<table class="stack">
<thead><tr><th scope="col">When</th><th scope="col">Metric</th><th scope="col">Kind</th><th scope="col">Amount</th><th scope="col">Balance after</th><th scope="col">Reference</th></tr></thead>
<tbody>
<% for (const e of it.d.creditLedger) { %>
<tr><td data-label="When"><%= it.h.when(e.at) %></td><td data-label="Metric"><%= e.metric %></td><td data-label="Kind"><%= e.kind %></td><td data-label="Amount"><%= (e.amount > 0 ? '+' : '') + it.h.num(e.amount) %></td><td data-label="Balance after"><%= it.h.num(e.balance_after) %></td><td data-label="Reference"><% if (e.reference) { %><code class="id"><%= e.reference %></code><% } else { %>—<% } %></td></tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
</section>
<section aria-labelledby="subs-heading">
<h2 id="subs-heading">Subscriptions</h2>
<% if (!it.d.subscriptions.length) { %><p>No subscriptions.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Subscriptions" tabindex="0">
<table class="stack">
<thead><tr><th scope="col">Subscription</th><th scope="col">Plan</th><th scope="col">Status</th><th scope="col">Period</th><th scope="col">Pending change</th></tr></thead>
<tbody>
<% for (const sub of it.d.subscriptions) { %>
<tr id="sub-<%= sub.subscriptionId %>">
  <td data-label="Subscription"><code class="id"><%= sub.subscriptionId %></code></td>
  <td data-label="Plan"><%= sub.tier || '—' %><%= sub.interval ? ', ' + (sub.interval === 'year' ? 'yearly' : sub.interval === 'month' ? 'monthly' : sub.interval) : '' %><%= sub.seats !== null && sub.seats !== undefined ? ', ' + it.h.num(sub.seats) + (sub.seats === 1 ? ' seat' : ' seats') : '' %></td>
  <td data-label="Status"><span class="badge badge-<%= sub.status %>"><%= sub.status || 'unknown' %></span><%= sub.cancelAtPeriodEnd ? ', cancels at period end' : '' %><%= sub.graceSince ? ', past due since ' + it.h.day(sub.graceSince) + ', grace until ' + it.h.day(sub.graceEndsAt) : '' %><%= sub.trialEnd ? ', trial until ' + it.h.day(sub.trialEnd) : '' %></td>
  <td data-label="Period"><%= it.h.day(sub.currentPeriodStart) %> to <%= it.h.day(sub.currentPeriodEnd) %></td>
  <td data-label="Pending change"><% const pc = sub.pendingChange; %><% if (pc) { %><%= pc.tier || 'same tier' %><%= pc.interval ? ', ' + (pc.interval === 'year' ? 'yearly' : 'monthly') : '' %><%= pc.seats ? ', ' + it.h.num(pc.seats) + (pc.seats === 1 ? ' seat' : ' seats') : '' %><%= pc.effective_at ? ', from ' + it.h.day(pc.effective_at) : '' %><% } else { %>—<% } %></td>
</tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
</section>
<section aria-labelledby="members-heading">
<h2 id="members-heading">Members</h2>
<% if (!it.d.members.length) { %><p>No members.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Members" tabindex="0">
<table class="stack">
<thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Member since</th></tr></thead>
<tbody>
<% for (const m of it.d.members) { %>
<tr><td data-label="Email"><%~ it.h.email(m.email) %><br><code class="id"><%= m.userId %></code></td><td data-label="Role"><%= m.role %></td><td data-label="Member since"><%= it.h.day(m.since) %></td></tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
</section>
<section aria-labelledby="invoices-heading">
<h2 id="invoices-heading">Billing history</h2>
<% if (!it.d.invoices.length) { %><p>No paid invoices.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Billing history" tabindex="0">
<table class="stack">
<thead><tr><th scope="col">Invoice</th><th scope="col" class="num">Paid</th><th scope="col">Paid on</th><th scope="col">Period</th></tr></thead>
<tbody>
<% for (const inv of it.d.invoices) { %>
<tr>
  <td data-label="Invoice"><% if (inv.hostedInvoiceUrl && /^https?:\/\//.test(inv.hostedInvoiceUrl)) { %><a href="<%= inv.hostedInvoiceUrl %>" rel="noopener noreferrer"><code><%= inv.invoiceId %></code></a><% } else { %><code><%= inv.invoiceId %></code><% } %></td>
  <td data-label="Paid" class="num"><%= it.h.money(inv.amountPaid, inv.currency) %></td>
  <td data-label="Paid on"><%= it.h.day(inv.paidAt) %></td>
  <td data-label="Period"><%= it.h.day(inv.periodStart) %> to <%= it.h.day(inv.periodEnd) %></td>
</tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
</section>
<section aria-labelledby="events-heading">
<h2 id="events-heading">Webhook events</h2>
<%~ include('@eventsTable', { rows: it.d.events, replayable: it.replayable, csrf: it.operator.csrfToken, back: it.back, h: it.h }) %>
<p><a href="/console/events?organisation_id=<%= o.id %>">All of its webhook events</a></p>
</section>
<section aria-labelledby="notifications-heading">
<h2 id="notifications-heading">Notifications</h2>
<% if (!it.d.notifications.length) { %><p>No notifications.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Notifications" tabindex="0">
<table class="stack">
<thead><tr><th scope="col">Created</th><th scope="col">Notification</th><th scope="col">Status</th><th scope="col"><span class="sr-only">Action</span></th></tr></thead>
<tbody>
<% for (const n of it.d.notifications) { %>
<tr>
  <td data-label="Created"><%= it.h.when(n.createdAt) %></td>
  <td data-label="Notification"><%= n.type %>, version <%= it.h.num(n.version) %><br><code class="id"><%= n.id %></code></td>
  <td data-label="Status"><span class="badge badge-<%= n.status %>"><%= n.status %></span><%= n.lastError ? ' (' + n.lastError + ')' : '' %></td>
  <td data-label="Action"><% if (n.status !== 'delivered') { %><%~ include('@action', { action: '/console/notifications/' + encodeURIComponent(n.id) + '/retry', csrf: it.operator.csrfToken, back: it.back, text: 'Retry', label: 'Retry notification ' + n.id }) %><% } %></td>
</tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
</section>
<section aria-labelledby="audit-heading">
<h2 id="audit-heading">Audit trail</h2>
<%~ include('@auditTable', { rows: it.d.audit, h: it.h }) %>
</section>
`;

const events = String.raw`<% layout('@layout') %>
<form class="filters" method="get" action="/console/events">
  <label for="status">Status
    <select id="status" name="status">
      <option value="">any</option>
<% for (const st of it.statuses) { %>      <option<%~ st === it.f.status ? ' selected' : '' %>><%= st %></option>
<% } %>
    </select>
  </label>
  <label for="type">Type
    <select id="type" name="type">
      <option value="">any</option>
<% for (const ty of it.types) { %>      <option<%~ ty === it.f.type ? ' selected' : '' %>><%= ty %></option>
<% } %>
    </select>
  </label>
  <label for="from">Received from (UTC)<input type="date" id="from" name="from" value="<%= it.f.from || '' %>"></label>
  <label for="to">to (UTC, inclusive)<input type="date" id="to" name="to" value="<%= it.f.to || '' %>"></label>
<% if (it.f.organisation_id) { %><input type="hidden" name="organisation_id" value="<%= it.f.organisation_id %>"><% } %>
  <button type="submit" class="primary">Filter</button>
</form>
<%~ include('@eventsTable', { rows: it.rows, replayable: it.replayable, csrf: it.operator.csrfToken, back: it.back, h: it.h, empty: ' match these filters', showOrganisation: true }) %>
<nav class="pager" aria-label="Pages">
<% if (it.before) { %><a href="/console/events<%= it.h.params(it.f) %>">First page</a><% } %>
<% if (it.next) { %><a href="/console/events<%= it.h.params({ ...it.f, before: it.next }) %>">Next page</a><% } %>
</nav>
`;

const event = String.raw`<% layout('@layout') %>
<% const e = it.e; %>
<dl class="facts">
  <dt>Type</dt><dd><%= it.h.eventWords(e.type) %> (<code><%= e.type %></code>)</dd>
  <dt>Status</dt><dd><span class="badge badge-<%= e.status %>"><%= e.status %></span><%= e.reason ? ' — ' + e.reason : '' %></dd>
  <dt>Organisation</dt><dd><% if (e.organisationId) { %><%~ include('@organisationRef', { id: e.organisationId, name: e.organisationName }) %><% } else { %>none matched<% } %></dd>
  <dt>Customer</dt><dd><%= e.customerId || '—' %></dd>
  <dt>Subscription</dt><dd><%= e.subscriptionId || '—' %></dd>
  <dt>Created (provider)</dt><dd><%= it.h.when(e.created) %></dd>
  <dt>Received</dt><dd><%= it.h.when(e.receivedAt) %> (<%= e.source %>, <%= it.h.num(e.attempts) %> deliver<%= e.attempts === 1 ? 'y' : 'ies' %>)</dd>
  <dt>Processed</dt><dd><%= it.h.when(e.processedAt) %></dd>
</dl>
<% if (e.replayable) { %>
<p><%~ include('@action', { action: '/console/events/' + encodeURIComponent(e.id) + '/replay', csrf: it.operator.csrfToken, back: it.back, text: 'Replay this event' }) %></p>
<% } else { %>
<p class="muted">Only a failed or unmatched event can be replayed; this one's outcome is final.</p>
<% } %>
<h2>Payload (as received and verified)</h2>
<pre tabindex="0" aria-label="Payload"><code><%= e.payload %></code></pre>
`;

const notifications = String.raw`<% layout('@layout') %>
<nav aria-label="Filter by status"><ul class="pager">
<% for (const st of ['pending', 'failed', 'delivered', '']) { %>
  <li><a href="/console/notifications<%= it.h.params({ status: st }) %>"<% if ((it.status || '') === st) { %> aria-current="page"<% } %>><%= st || 'all' %></a></li>
<% } %>
</ul></nav>
<% if (!it.rows.length) { %><p>No <%= it.status || '' %> notifications.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Notifications" tabindex="0">
<table class="stack">
<thead><tr><th scope="col">Created</th><th scope="col">Notification</th><th scope="col">Organisation</th><th scope="col">Status</th><th scope="col">Deliveries</th><th scope="col"><span class="sr-only">Action</span></th></tr></thead>
<tbody>
<% for (const n of it.rows) { %>
<tr>
  <td data-label="Created"><%= it.h.when(n.createdAt) %></td>
  <td data-label="Notification"><%= n.type %>, version <%= it.h.num(n.version) %><br><code class="id"><%= n.id %></code></td>
  <td data-label="Organisation"><%~ include('@organisationRef', { id: n.organisationId, name: n.organisationName }) %></td>
  <td data-label="Status"><span class="badge badge-<%= n.status %>"><%= n.status %></span></td>
  <td data-label="Deliveries"><% for (const d of n.deliveries) { %><div><%= d.url %>: <%= d.status %>, <%= it.h.num(d.attempts) %> attempt<%= d.attempts === 1 ? '' : 's' %><%= d.lastError ? ' (' + d.lastError + ')' : '' %></div><% } %></td>
  <td data-label="Action"><% if (n.status !== 'delivered') { %><%~ include('@action', { action: '/console/notifications/' + encodeURIComponent(n.id) + '/retry', csrf: it.operator.csrfToken, back: it.back, text: 'Retry', label: 'Retry notification ' + n.id }) %><% } %></td>
</tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
`;

const reconciliation = String.raw`<% layout('@layout') %>
<p>The reconciliation walks the provider's events and subscriptions and applies what webhooks missed. Runs are
listed whoever started them (the schedule, the CLI's <code>provider:sync</code>, or this page).</p>
<p><%~ include('@action', { action: '/console/reconciliation/run', csrf: it.operator.csrfToken, text: 'Run now' }) %></p>
<% if (!it.runs.length) { %><p>No runs recorded yet.</p><% } else { %>
<div class="table-wrap" role="region" aria-label="Reconciliation runs" tabindex="0">
<table class="stack">
<thead><tr><th scope="col">Started</th><th scope="col">By</th><th scope="col">Outcome</th><th scope="col">Finished</th><th scope="col">Summary</th></tr></thead>
<tbody>
<% for (const r of it.runs) { %>
<tr>
  <td data-label="Started"><%= it.h.when(r.startedAt) %></td><td data-label="By"><%= it.h.who(r.trigger) %></td>
  <td data-label="Outcome"><span class="badge badge-<%= r.outcome %>"><%= r.outcome %></span></td>
  <td data-label="Finished"><%= it.h.when(r.finishedAt) %></td>
  <td data-label="Summary"><% if (r.summary) { %><%= it.h.num(r.summary.events_seen) %> events seen, <%= it.h.num(r.summary.events_applied) %> applied; <%= it.h.num(r.summary.subscriptions_checked) %> subscriptions checked, <%= it.h.num(r.summary.subscriptions_corrected) %> corrected<% } else if (r.error) { %><%= r.error %><% } else { %>—<% } %></td>
</tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
`;

const audit = String.raw`<% layout('@layout') %>
<p>Every change made through the admin API, the subscription-change routes, the operator CLI and this console, newest first.</p>
<%~ include('@auditTable', { rows: it.rows, h: it.h, showOrganisation: true }) %>
<nav class="pager" aria-label="Pages">
<% if (it.after) { %><a href="/console/audit">First page</a><% } %>
<% if (it.next) { %><a href="/console/audit<%= it.h.params({ after: it.next }) %>">Next page</a><% } %>
</nav>
`;

const auditEntry = String.raw`<% layout('@layout') %>
<% const a = it.entry; %>
<dl class="facts">
  <dt>When</dt><dd><%= it.h.when(a.at) %></dd>
  <dt>Who</dt><dd><%= a.actor.text %><% if (a.actor.id) { %> <code class="id"><%= a.actor.id %></code><% } %></dd>
  <dt>Action</dt><dd><%= a.action %></dd>
  <dt>Organisation</dt><dd><% if (a.organisation) { %><%~ include('@organisationRef', a.organisation) %><% } else { %>—<% } %></dd>
  <dt>Request id</dt><dd><% if (a.requestId) { %><code class="id"><%= a.requestId %></code><% } else { %>—<% } %></dd>
</dl>
<h2>What changed</h2>
<%~ include('@changes', { changes: a.changes, h: it.h }) %>
<p><a href="/console/audit">The whole audit log</a></p>
`;

export const TEMPLATES = {
  layout,
  signIn,
  signedIn,
  signedOut,
  link,
  error,
  overview,
  action,
  organisationRef,
  changes,
  eventsTable,
  auditTable,
  organisations,
  organisation,
  events,
  event,
  notifications,
  reconciliation,
  audit,
  auditEntry,
  plans,
  planCounts,
};
