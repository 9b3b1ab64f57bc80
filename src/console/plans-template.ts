/*
 * The console's plans page (spec §17), an Eta template like those of templates.ts: each tier's versions with their
 * live subscriptions, a migration's preview (its summary and first organisations) and the migrate form, and the
 * state of a migration started from it. `it` is ConsolePlansService's PlansPage, `it.h` the helpers.
 */

// "sso: 12, audit_log: 3" from a summary's counts; "none" when empty.
const counts = String.raw`<% const entries = Object.entries(it.counts); %><% if (!entries.length) { %><span class="muted">none</span><% } else { %><%= entries.map(([name, n]) => name + ': ' + it.h.num(n)).join(', ') %><% } %>`;

export const plans = String.raw`<% layout('@layout') %>
<p>Each tier's plan versions, recorded from the tier table at start. A subscription keeps the version it bought until
it is migrated; preview a migration to see who gains or loses what, then migrate.</p>
<% for (const t of it.plans.data) { %>
<section aria-labelledby="tier-<%= t.tier %>">
<h2 id="tier-<%= t.tier %>"><%= t.tier %></h2>
<div class="table-wrap" role="region" aria-label="Versions of <%= t.tier %>" tabindex="0">
<table class="stack">
<thead><tr><th scope="col">Version</th><th scope="col">Recorded</th><th scope="col" class="num">Live subscriptions</th></tr></thead>
<tbody>
<% t.versions.forEach((v, i) => { %>
<tr><td data-label="Version"><%= v.version %><% if (i === t.versions.length - 1) { %> <span class="badge badge-active">newest</span><% } %></td><td data-label="Recorded"><%= it.h.when(v.created_at) %></td><td data-label="Live subscriptions" class="num"><%= it.h.num(v.subscriptions) %></td></tr>
<% }) %>
</tbody>
</table>
</div>
</section>
<% } %>
<section aria-labelledby="preview-heading">
<h2 id="preview-heading">Preview a migration</h2>
<% if (!it.tiers.length) { %><p>No paid tier has versions yet.</p><% } else { %>
<form class="filters" method="get" action="/console/plans">
  <label for="pv-tier">Tier
    <select id="pv-tier" name="tier">
<% for (const tier of it.tiers) { %>      <option<% if (it.choice && it.choice.tier === tier) { %> selected<% } %>><%= tier %></option>
<% } %>
    </select>
  </label>
  <label for="pv-from">From version (empty: every older one)<input id="pv-from" name="from_version" inputmode="numeric" pattern="[0-9]*" maxlength="9" value="<%= it.choice && it.choice.fromVersion !== undefined ? it.choice.fromVersion : '' %>"></label>
  <label for="pv-to">To version (empty: the newest)<input id="pv-to" name="to_version" inputmode="numeric" pattern="[0-9]*" maxlength="9" value="<%= it.choice && it.choice.toVersion !== undefined ? it.choice.toVersion : '' %>"></label>
  <button type="submit" class="primary">Preview</button>
</form>
<% } %>
<% if (it.problem) { %><p class="flash flash-refused" role="alert">Refused: <%= it.problem %></p><% } %>
<% if (it.preview) { const p = it.preview; %>
<h3 id="summary-heading">What moving <%= it.choice.tier %> would change</h3>
<dl class="facts" aria-labelledby="summary-heading">
  <dt>Subscriptions that would move</dt><dd><strong><%= it.h.num(p.subscriptions) %></strong></dd>
  <dt>Features gained</dt><dd><%~ include('@planCounts', { counts: p.summary.features_gained, h: it.h }) %></dd>
  <dt>Features lost</dt><dd><%~ include('@planCounts', { counts: p.summary.features_lost, h: it.h }) %></dd>
  <dt>Limits lowered</dt><dd><%~ include('@planCounts', { counts: p.summary.limits_lowered, h: it.h }) %></dd>
  <dt>Over the new limit now</dt><dd><%~ include('@planCounts', { counts: p.summary.over_new_limit, h: it.h }) %></dd>
  <dt>Price changed</dt><dd><%= it.h.num(p.summary.price_changed) %></dd>
</dl>
<% if (p.data.length) { %>
<h3 id="orgs-heading">The first organisations</h3>
<div class="table-wrap" role="region" aria-labelledby="orgs-heading" tabindex="0">
<table class="stack">
<thead><tr><th scope="col">Organisation</th><th scope="col">Subscription</th><th scope="col">From</th><th scope="col">Gains</th><th scope="col">Loses</th><th scope="col">Limits</th><th scope="col">Price</th></tr></thead>
<tbody>
<% for (const r of p.data) { %>
<tr>
  <td data-label="Organisation"><%~ include('@organisationRef', { id: r.organisation_id, name: p.names[r.organisation_id] }) %></td>
  <td data-label="Subscription"><code class="id"><%= r.subscription_id %></code></td>
  <td data-label="From">version <%= r.from_version %></td>
  <td data-label="Gains"><%= r.features_gained.join(', ') || '—' %></td>
  <td data-label="Loses"><%= r.features_lost.join(', ') || '—' %></td>
  <td data-label="Limits"><% if (!r.limits.length) { %>—<% } else { %><ul class="changes">
<% for (const l of r.limits) { %>    <li><span class="field"><%= l.metric %></span>: <%= it.h.num(l.from) %> → <%= it.h.num(l.to) %>, <%= it.h.num(l.used) %> used<% if (l.over) { %> <span class="badge badge-failed">over</span><% } %></li>
<% } %>  </ul><% } %></td>
  <td data-label="Price"><%= r.price ? 'changes' : 'same' %></td>
</tr>
<% } %>
</tbody>
</table>
</div>
<% if (p.has_more) { %><p class="muted">More organisations follow: the admin route and <code>plans:migrate --preview</code> page through them all.</p><% } %>
<% } %>
<% if (p.subscriptions > 0) { %>
<h3 id="migrate-heading">Migrate</h3>
<form class="filters" method="post" action="/console/plans/migrations" aria-labelledby="migrate-heading">
  <input type="hidden" name="_csrf" value="<%= it.operator.csrfToken %>">
  <input type="hidden" name="tier" value="<%= it.choice.tier %>">
  <input type="hidden" name="from_version" value="<%= it.choice.fromVersion !== undefined ? it.choice.fromVersion : '' %>">
  <input type="hidden" name="to_version" value="<%= it.choice.toVersion !== undefined ? it.choice.toVersion : '' %>">
  <fieldset>
    <legend>When each subscription moves</legend>
    <label><input type="radio" name="at" value="period_end" checked> At the end of its current period</label>
    <label><input type="radio" name="at" value="now"> Now</label>
  </fieldset>
  <button type="submit" class="primary">Migrate <%= it.h.num(p.subscriptions) %> subscription<%= p.subscriptions === 1 ? '' : 's' %></button>
</form>
<% } %>
<% } %>
</section>
<% if (it.migration) { const m = it.migration; %>
<section aria-labelledby="migration-heading">
<h2 id="migration-heading">Migration of <%= m.tier %></h2>
<dl class="facts" aria-labelledby="migration-heading">
  <dt>Status</dt><dd><span class="badge badge-<%= m.status === 'done' ? 'ok' : m.status %>"><%= m.status %></span></dd>
  <dt>Versions</dt><dd><%= m.from_version === null ? 'every older version' : 'version ' + m.from_version %> → version <%= m.to_version %>, <%= m.at === 'now' ? 'now' : 'at each period end' %></dd>
  <dt>Moved</dt><dd><%= it.h.num(m.done) %> of <%= it.h.num(m.total) %><% if (m.failed) { %>, <%= it.h.num(m.failed) %> not moved<% } %></dd>
  <dt>Started</dt><dd><%= it.h.when(m.created_at) %></dd>
  <dt>Finished</dt><dd><%= m.finished_at ? it.h.when(m.finished_at) : 'not yet' %></dd>
  <dt>Id</dt><dd><code class="id"><%= m.id %></code></dd>
</dl>
<% if (m.errors.length) { %>
<h3>Not moved</h3>
<ul>
<% for (const e of m.errors) { %>  <li><code class="id"><%= e.subscription_id %></code>: <%= e.message %></li>
<% } %></ul>
<% } %>
<% if (m.status === 'running') { %><p>It runs in the background: reload this page to follow it.</p><% } %>
</section>
<% } %>
`;

export const planCounts = counts;
