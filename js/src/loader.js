// Each view's own ES module, the same few hundred bytes for every view. nbgraph's views module
// (index.js, bundled to widget.js) comes to the browser once per kernel, in a model of its own
// that the view's `module` trait names: this finds that model through the widget manager,
// imports its code once a page, puts its stylesheet where the view is drawn (the page, or the
// shadow root a front-end draws it in) and hands the view to it. Where the model is missing (a
// notebook's saved widget state without it), the view says how to see it live.

/** What this page has: the views module per module model id, and the roots styled. */
const page = (globalThis[Symbol.for("nbgraph.views")] ??= { imported: new Map(), styled: new WeakSet() });
const imported = page.imported;

/** The views module and its stylesheet for this view's model. @param {any} model */
function viewsOf(model) {
  const id = model.get("module");
  let loading = imported.get(id);
  if (!loading) {
    loading = model.widget_manager.get_model(id).then(async (shared) => {
      const url = URL.createObjectURL(new Blob([shared.get("code")], { type: "text/javascript" }));
      try {
        return { views: await import(/* webpackIgnore: true */ url), css: shared.get("css") };
      } finally {
        URL.revokeObjectURL(url);
      }
    });
    loading.catch(() => imported.delete(id));
    imported.set(id, loading);
  }
  return loading;
}

/** The views module says hello once here; the model is not held back meanwhile. */
function initialize({ model }) {
  viewsOf(model).then(
    ({ views }) => views.default.initialize({ model }),
    () => {},
  );
}

/** The stylesheet, once in the root `el` is drawn in: a shadow root, or else the page. */
function style(el, css) {
  const root = el.getRootNode();
  const target = typeof ShadowRoot !== "undefined" && root instanceof ShadowRoot ? root : el.ownerDocument;
  if (page.styled.has(target)) return;
  page.styled.add(target);
  const sheet = el.ownerDocument.createElement("style");
  sheet.dataset.nbgraph = "views";
  sheet.textContent = css;
  (target === el.ownerDocument ? target.head : target).append(sheet);
}

/** @param {{model: any, el: HTMLElement}} ctx */
async function render({ model, el }) {
  let loaded;
  try {
    loaded = await viewsOf(model);
  } catch (error) {
    console.error("nbgraph: the views module was not found", error);
    const note = document.createElement("p");
    note.className = "nbg-missing";
    note.textContent = "This nbgraph view needs its kernel: run its cell again to see it live.";
    el.replaceChildren(note);
    return () => el.replaceChildren();
  }
  style(el, loaded.css);
  return loaded.views.default.render({ model, el });
}

export default { initialize, render };
