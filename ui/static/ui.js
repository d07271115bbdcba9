// scribe ui: the list's filter as you type, a conversation's "load more",
// permalinks, live messages, find in the page and the copy button. Every piece of HTML it
// inserts comes from the server's templates (escaped there) and is
// parsed in a <template>, where nothing runs.
"use strict";

(function () {
  // Messages kept in the page: past this, the far end is dropped (and
  // can be fetched again), so the page does not grow with the session.
  const MAX_MESSAGES = 250;
  // The path the viewer is served under ("" at the root).
  const base = document.body.dataset.base || "";

  function parse(html) {
    const t = document.createElement("template");
    t.innerHTML = html;
    return t.content;
  }

  function get(url) {
    return fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } }).then(function (r) {
      if (!r.ok) { throw new Error(r.status + " " + r.statusText); }
      return r.text();
    });
  }

  // A session's usage is counted after the page is shown.
  document.querySelectorAll("dd.usage-slot[data-fetch]").forEach(function (slot) {
    get(slot.dataset.fetch).then(function (html) {
      slot.replaceChildren(parse(html));
    }).catch(function () { slot.textContent = "could not be counted"; });
  });

  // <select class="autosubmit"> submits its form when changed.
  document.querySelectorAll("select.autosubmit").forEach(function (s) {
    s.addEventListener("change", function () { s.form.submit(); });
  });

  // The list: each row's message count is asked for once the rows are
  // shown (counting reads the sessions; the server keeps the counts).
  function countMessages(root) {
    const spans = [...root.querySelectorAll("span.msgs[data-count]")];
    if (!spans.length) { return; }
    const store = new URLSearchParams(location.search).get("store") || "";
    const p = new URLSearchParams({ store: store });
    spans.forEach(function (s) { p.append("id", s.dataset.count); });
    fetch(base + "/counts?" + p.toString(), { credentials: "same-origin", headers: { "Accept": "application/json" } }).then(function (r) {
      if (!r.ok) { throw new Error(r.status); }
      return r.json();
    }).then(function (counts) {
      spans.forEach(function (s) {
        const n = counts[s.dataset.count];
        if (typeof n === "number") { s.textContent = " · " + n + (n === 1 ? " message" : " messages"); }
        delete s.dataset.count;
      });
    }).catch(function () {});
  }
  countMessages(document);

  // The list: filter as you type.
  const q = document.getElementById("q");
  const results = document.getElementById("results");
  if (q && results) {
    let timer = 0, seq = 0;
    q.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () {
        const form = q.form, params = new URLSearchParams(new FormData(form));
        params.set("partial", "1");
        const mine = ++seq;
        get(base + "/?" + params.toString()).then(function (html) {
          if (mine !== seq) { return; }
          results.replaceChildren(parse(html));
          countMessages(results);
          params.delete("partial");
          history.replaceState(null, "", base + "/?" + params.toString());
        }).catch(function () {});
      }, 150);
    });
  }

  // The copy buttons: data-copy names the element whose text is copied.
  document.querySelectorAll("button.copy").forEach(function (b) {
    b.addEventListener("click", function () {
      const el = document.getElementById(b.dataset.copy);
      if (!el) { return; }
      const done = function () { b.classList.add("copied"); };
      if (navigator.clipboard) {
        navigator.clipboard.writeText(el.textContent).then(done, function () {});
      }
    });
  });

  // Keys: "/" goes to the filter; j and k to the next and previous
  // message (not while typing).
  function typing(ev) {
    const t = ev.target;
    return ev.ctrlKey || ev.metaKey || ev.altKey || (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)));
  }
  document.addEventListener("keydown", function (ev) {
    if (typing(ev)) { return; }
    const field = document.getElementById("find") || q;
    if (ev.key === "/" && field) { ev.preventDefault(); field.focus(); return; }
    if (ev.key !== "j" && ev.key !== "k") { return; }
    const all = [...document.querySelectorAll("#messages > article.msg:not(.slim)")];
    if (!all.length) { return; }
    let i = all.findIndex(function (m) { return m.getBoundingClientRect().top > 60; });
    if (i < 0) { i = all.length; }
    const cur = document.querySelector("article.msg.current");
    if (cur && all.indexOf(cur) >= 0) { i = all.indexOf(cur) + 1; }
    const next = all[Math.max(0, Math.min(all.length - 1, ev.key === "j" ? i : i - 2))];
    if (cur) { cur.classList.remove("current"); }
    next.classList.add("current");
    next.scrollIntoView({ block: "start" });
  });

  const main = document.querySelector("main.session");
  if (!main) { return; }
  const box = document.getElementById("messages");

  function messages() { return box.querySelectorAll(":scope > article.msg"); }
  function link(kind) { return box.querySelector(":scope > a.more." + kind); }

  // moreLink makes the "load earlier/later" link for the message uuid.
  function moreLink(kind, uuid) {
    const a = document.createElement("a");
    const p = new URLSearchParams();
    p.set(kind === "earlier" ? "before" : "after", uuid);
    a.className = "more " + kind;
    a.dataset.fetch = main.dataset.window + "&" + p.toString();
    a.href = "?" + new URLSearchParams({ store: new URL(main.dataset.window, location.href).searchParams.get("store") || "", at: uuid }) + "#m-" + uuid;
    a.textContent = kind === "earlier" ? "Load earlier messages" : "Load later messages";
    return a;
  }

  // trim drops messages from the end opposite to where the reader went.
  function trim(fromTop) {
    const all = messages();
    const extra = all.length - MAX_MESSAGES;
    if (extra <= 0) { return; }
    if (fromTop) {
      const keep = all[extra];
      for (let i = 0; i < extra; i++) { all[i].remove(); }
      const old = link("earlier");
      if (old) { old.remove(); }
      box.prepend(moreLink("earlier", keep.id.slice(2)));
      watchMore();
    } else {
      const keep = all[all.length - 1 - extra];
      for (let i = all.length - extra; i < all.length; i++) { all[i].remove(); }
      const old = link("later");
      if (old) { old.remove(); }
      box.append(moreLink("later", keep.id.slice(2)));
      watchMore();
      stopLive();
    }
  }

  // "Load earlier / later": the fragment replaces its link; the reader's
  // place stays where it was. A link is followed when clicked, and by
  // itself when the reader scrolls to within a screen of it.
  box.addEventListener("click", function (ev) {
    const a = ev.target.closest("a.more");
    if (!a || !a.dataset.fetch) { return; }
    ev.preventDefault();
    loadMore(a);
  });
  const near = "IntersectionObserver" in window ? new IntersectionObserver(function (seen) {
    seen.forEach(function (e) {
      if (e.isIntersecting && e.target.isConnected && e.target.dataset.fetch) { loadMore(e.target); }
    });
  }, { rootMargin: "100% 0px" }) : null;
  function watchMore() {
    if (near) { box.querySelectorAll(":scope > a.more").forEach(function (a) { near.observe(a); }); }
  }
  function loadMore(a) {
    if (a.dataset.loading) { return; }
    a.dataset.loading = "1";
    if (near) { near.unobserve(a); }
    const earlier = a.classList.contains("earlier");
    const anchor = earlier ? a.nextElementSibling : null;
    const before = anchor ? anchor.getBoundingClientRect().top : 0;
    a.textContent = "Loading…";
    get(a.dataset.fetch).then(function (html) {
      const frag = parse(html);
      // A fragment fetched for one side brings only that side's link.
      frag.querySelectorAll(earlier ? "a.more.later" : "a.more.earlier").forEach(function (x) { x.remove(); });
      frag.querySelectorAll("article.msg").forEach(function (m) {
        if (document.getElementById(m.id)) { m.remove(); }
      });
      a.replaceWith(frag);
      if (anchor) { window.scrollBy(0, anchor.getBoundingClientRect().top - before); }
      trim(!earlier);
      if (!earlier && !link("later")) { startLive(); }
      watchMore();
    }).catch(function () { delete a.dataset.loading; a.textContent = "Could not load: try again"; });
  }

  // A subagent's messages are fetched when its call is opened (or a find
  // in the page needs them); the promise settles once all are in. The
  // sections being fetched are kept in loading with their fetches, so a
  // find begun meanwhile waits for them instead of searching without.
  const loading = new Map();
  function fetchAgents(sections) {
    return Promise.all([...sections].map(function (sec) {
      if (loading.has(sec)) { return loading.get(sec); }
      const url = sec.dataset.fetch;
      delete sec.dataset.fetch;
      const done = get(url).then(function (html) {
        sec.querySelectorAll(":scope > p.note").forEach(function (n) { n.remove(); });
        sec.appendChild(parse(html));
      }).catch(function () { sec.dataset.fetch = url; }).finally(function () { loading.delete(sec); });
      loading.set(sec, done);
      return done;
    }));
  }
  function openAgents(root) { fetchAgents(root.querySelectorAll(":scope > section.agent[data-fetch]")); }
  document.addEventListener("toggle", function (ev) {
    if (ev.target.matches && ev.target.matches("details.tool") && ev.target.open) { openAgents(ev.target); }
  }, true);

  // "Fork here": the actions' fork form, up to that message, opened.
  box.addEventListener("click", function (ev) {
    const b = ev.target.closest("button.fork-here");
    const form = document.querySelector("form.fork");
    if (!b || !form) { return; }
    form.querySelector("input[name=up_to]").value = b.dataset.uuid;
    const actions = form.closest("details");
    if (actions) { actions.open = true; }
    form.scrollIntoView({ block: "center" });
    form.querySelector("input[name=title]").focus();
  });

  // Permalinks: #m-<uuid> not in the page opens the window around it.
  function openTo(el) {
    for (let d = el.closest("details"); d; d = d.parentElement.closest("details")) { d.open = true; }
    el.scrollIntoView({ block: "start" });
  }
  function land() {
    const h = decodeURIComponent(location.hash.slice(1));
    if (h.indexOf("m-") === 0) {
      const el = document.getElementById(h);
      if (el) { openTo(el); return true; }
      const u = new URL(location.href);
      if (u.searchParams.get("at") === h.slice(2)) { return false; } // asked already: not in this session
      u.searchParams.set("at", h.slice(2));
      location.replace(u.pathname + "?" + u.searchParams.toString() + location.hash);
      return true;
    }
    return false;
  }
  window.addEventListener("hashchange", land);

  // Find in the page: the messages shown are searched as the reader
  // types (case ignored), each match put in a <mark>; Enter, Shift+Enter
  // and the arrows go from one to the next, opening what folds it.
  const find = document.getElementById("find");
  if (find) {
    const found = find.form.querySelector(".found");
    let marks = [], cur = -1, timer = 0;
    const clear = function () {
      marks.forEach(function (m) {
        const p = m.parentNode;
        if (!p) { return; }
        p.replaceChild(document.createTextNode(m.textContent), m);
        p.normalize();
      });
      marks = [];
      cur = -1;
    };
    const go = function (i) {
      if (!marks.length) { return; }
      if (cur >= 0) { marks[cur].classList.remove("now"); }
      cur = (i + marks.length) % marks.length;
      marks[cur].classList.add("now");
      openTo(marks[cur]);
      marks[cur].scrollIntoView({ block: "center" }); // clear of the sticky header
      found.textContent = (cur + 1) + " of " + marks.length;
    };
    const run = function (fetched) {
      clear();
      const text = find.value.trim();
      if (!text) { found.textContent = ""; return; }
      // The subagents under the calls shown are searched too: those not
      // opened yet are fetched first, those being fetched waited for
      // (once: one that fails is left out).
      const unfetched = [...box.querySelectorAll("section.agent[data-fetch]"), ...loading.keys()];
      if (unfetched.length && fetched !== true) {
        found.textContent = "searching the subagents…";
        fetchAgents(unfetched).then(function () { if (find.value.trim() === text) { run(true); } });
        return;
      }
      const re = new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gi");
      const nodes = [];
      const walk = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
      for (let n = walk.nextNode(); n; n = walk.nextNode()) {
        re.lastIndex = 0;
        if (re.test(n.data)) { nodes.push(n); }
      }
      nodes.forEach(function (n) {
        const spans = [];
        re.lastIndex = 0;
        for (let m = re.exec(n.data); m; m = re.exec(n.data)) { spans.push([m.index, m[0].length]); }
        for (let k = spans.length - 1; k >= 0; k--) {
          const hit = n.splitText(spans[k][0]);
          hit.splitText(spans[k][1]);
          const mark = document.createElement("mark");
          mark.className = "find";
          hit.replaceWith(mark);
          mark.append(hit);
        }
      });
      marks = [...box.querySelectorAll("mark.find")];
      if (!marks.length) { found.textContent = "not in the messages shown"; return; }
      go(0);
    };
    find.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(run, 200); });
    find.addEventListener("keydown", function (ev) {
      if (ev.key !== "Enter") { return; }
      ev.preventDefault();
      clearTimeout(timer);
      if (!marks.length) { run(); return; }
      go(cur + (ev.shiftKey ? -1 : 1));
    });
    find.form.querySelector(".find-next").addEventListener("click", function () { go(cur + 1); });
    find.form.querySelector(".find-prev").addEventListener("click", function () { go(cur - 1); });
    find.form.addEventListener("submit", function (ev) { ev.preventDefault(); });
  }
  if (!land() && !link("later")) {
    window.scrollTo(0, document.documentElement.scrollHeight);
  }
  watchMore();

  // Live: new messages arrive as server-sent events and are appended,
  // following the end only when the reader was at it.
  let source = null;
  function atEnd() {
    return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 80;
  }
  function startLive() {
    if (source || !main.dataset.events) { return; }
    const all = messages();
    const url = new URL(main.dataset.events, location.href);
    if (all.length) { url.searchParams.set("after", all[all.length - 1].id.slice(2)); }
    source = new EventSource(url.pathname + "?" + url.searchParams.toString());
    source.addEventListener("messages", function (ev) {
      if (link("later")) { return; }
      const follow = atEnd();
      const frag = parse(JSON.parse(ev.data).html);
      frag.querySelectorAll("article.msg").forEach(function (m) {
        if (document.getElementById(m.id)) { m.remove(); }
      });
      box.append(frag);
      // Past the cap, the far end from the reader goes: the oldest when
      // they follow the end, else what just came (a "later" link brings
      // it back), so what they read is not taken from under them.
      trim(follow);
      if (follow) { window.scrollTo(0, document.documentElement.scrollHeight); }
    });
  }
  function stopLive() {
    if (source) { source.close(); source = null; }
  }
  if (!link("later")) { startLive(); }
})();
