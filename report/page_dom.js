/* SPDX-License-Identifier: Apache-2.0 */
/* adump report: the DOM helpers both pages draw with (page.js, page_series.js). Strings reach
 * the page as text nodes or textContent, never as markup. */
'use strict';
const adumpDom = (function () {
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function add(parent) {
    for (let i = 1; i < arguments.length; i++) {
      const c = arguments[i];
      if (c === null || c === undefined) continue;
      parent.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
    }
    return parent;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }
  return { el: el, add: add, clear: clear };
})();
