/* SPDX-License-Identifier: Apache-2.0 */
/* The walks of the autograd graph adump.torch does (_torch_module.py), in C: the same steps
 * in the same order, the interpreter left out of loops that visit every graph node.
 * _graph_walk(): when a module call returns (_hook_backward()), the nodes the call made.
 * _graph_reach(): when backward starts (_resolve_deferred()), the nodes the pass reaches and
 * the edges into nodes that carry a deferred record. Nodes are torch's own Python objects
 * (their metadata dict, their next_functions), reached through their attributes, so nothing
 * here depends on torch's C++ ABI. */
#include "pyadump_int.h"

static PyObject *s_metadata, *s_next_functions, *s_tag, *s_deferred, *s_view_outs,
	*s_view_watch;

/* @md[@key] as a new reference; NULL with no exception where it has none (a dict's miss
 * raises no KeyError to clear: most nodes a walk sees have no record). */
static PyObject *md_get(PyObject *md, PyObject *key)
{
	PyObject *v;

	if (PyDict_Check(md)) {
		v = PyDict_GetItemWithError(md, key);
		Py_XINCREF(v);
		return v;
	}
	v = PyObject_GetItem(md, key);
	if (!v && PyErr_ExceptionMatches(PyExc_KeyError))
		PyErr_Clear();
	return v;
}

/* (id(node), nr), as the Python side builds its keys. */
static PyObject *edge_key(PyObject *node, PyObject *nr)
{
	PyObject *id = PyLong_FromVoidPtr(node), *key;

	if (!id)
		return NULL;
	key = PyTuple_Pack(2, id, nr);
	Py_DECREF(id);
	return key;
}

/* Whether @node was tagged by a call closed before @c0 (the walk stops there); tags it @c1
 * when it has no tag. Return: 1 stop, 0 go on, -1 error. */
static int node_tag(PyObject *node, PyObject *meta_key, long c0, PyObject *c1)
{
	PyObject *md = PyObject_GetAttr(node, s_metadata), *m;
	int ret = -1;

	if (!md)
		return -1;
	m = md_get(md, meta_key);
	if (!m) {
		if (PyErr_Occurred())
			goto out;
		m = PyDict_New();
		if (!m || PyDict_SetItem(m, s_tag, c1) < 0 || PyObject_SetItem(md, meta_key, m) < 0)
			goto out_m;
		ret = 0;
	} else if (!PyDict_Check(m)) {
		PyErr_SetString(PyExc_TypeError, "_graph_walk: a node's record is not a dict");
	} else {
		PyObject *tag = PyDict_GetItemWithError(m, s_tag);

		if (!tag && PyErr_Occurred())
			goto out_m;
		if (!tag) {
			ret = PyDict_SetItem(m, s_tag, c1);
		} else {
			long t = PyLong_AsLong(tag);

			ret = t == -1 && PyErr_Occurred() ? -1 : t < c0;
		}
	}
out_m:
	Py_XDECREF(m);
out:
	Py_DECREF(md);
	return ret;
}

/* @node's next_functions (a new reference), checked to be a tuple of pairs; NULL with an
 * exception. @who names the walk in the message. */
static PyObject *next_of(PyObject *node, const char *who)
{
	PyObject *next = PyObject_GetAttr(node, s_next_functions);

	if (!next)
		return NULL;
	if (!PyTuple_Check(next)) {
		PyErr_Format(PyExc_TypeError, "%s: next_functions is not a tuple", who);
		goto err;
	}
	for (Py_ssize_t j = 0; j < PyTuple_Size(next); j++) {
		PyObject *edge = PyTuple_GetItem(next, j);

		if (!PyTuple_Check(edge) || PyTuple_Size(edge) != 2) {
			PyErr_Format(PyExc_TypeError, "%s: an edge is not a pair", who);
			goto err;
		}
	}
	return next;
err:
	Py_DECREF(next);
	return NULL;
}

/* @nxt onto @todo, unless the walk does not go there: an AccumulateGrad node (@accumulate
 * its type), one whose id is in @skip (a set, or NULL), one in @seen. Return: 0, or -1
 * with an exception. */
static int todo_push(PyObject *todo, PyObject *nxt, PyObject *accumulate, PyObject *skip,
		     PyObject *seen)
{
	PyObject *id;
	int r;

	if ((PyObject *)Py_TYPE(nxt) == accumulate)
		return 0;
	id = PyLong_FromVoidPtr(nxt);
	if (!id)
		return -1;
	r = skip ? PySet_Contains(skip, id) : 0;
	if (r == 0)
		r = PyDict_Contains(seen, id);
	Py_DECREF(id);
	return r < 0 || (r == 0 && PyList_Append(todo, nxt) < 0) ? -1 : 0;
}

/* The walk's next node, taken from the end of @todo (not empty) into *@node (a new
 * reference). Return: 1 the first time it is seen (kept in @seen: id -> node, held so that
 * no id comes back meanwhile), 0 seen before (*@node NULL), -1 with an exception. */
static int todo_pop(PyObject *todo, PyObject *seen, PyObject **node)
{
	Py_ssize_t last = PyList_Size(todo) - 1;
	PyObject *n = PyList_GetItem(todo, last), *id;
	int r;

	*node = NULL;
	Py_INCREF(n);
	if (PyList_SetSlice(todo, last, last + 1, NULL) < 0) {
		Py_DECREF(n);
		return -1;
	}
	id = PyLong_FromVoidPtr(n);
	r = id ? PyDict_Contains(seen, id) : -1;
	if (r == 0)
		r = PyDict_SetItem(seen, id, n) < 0 ? -1 : 1;
	else if (r > 0)
		r = 0;
	Py_XDECREF(id);
	if (r == 1)
		*node = n;
	else
		Py_DECREF(n);
	return r;
}

/* A walk's state: the nodes to visit (@todo, last first), those seen (id -> node, held so
 * that no id comes back meanwhile), its two results, and what its steps read. */
struct walk {
	PyObject *todo, *seen, *outs[2];
	PyObject *meta_key, *accumulate;
	long floor;                     /* a node tagged before it stops the walk */
	/* _graph_walk()'s: the call's input nodes and edge keys, its own tag */
	PyObject *in_nodes, *key_in, *key_out, *c1;
};

/* @w's todo a copy of the list @todo_in, nothing seen, its results empty (outs[1] a set
 * with @is_set, else a list). Return: 0, or -1 with an exception (what was made is put by
 * walk_end()). */
static int walk_begin(struct walk *w, PyObject *todo_in, bool is_set)
{
	w->todo = PyList_GetSlice(todo_in, 0, PyList_Size(todo_in));
	w->seen = PyDict_New();
	w->outs[0] = PyList_New(0);
	w->outs[1] = is_set ? PySet_New(NULL) : PyList_New(0);
	return w->todo && w->seen && w->outs[0] && w->outs[1] ? 0 : -1;
}

/* @visit(w, node) for each node of the walk, once, until @w's todo is empty. Return: 0, or
 * -1 with an exception. */
static int walk_run(struct walk *w, int (*visit)(struct walk *w, PyObject *node))
{
	while (PyList_Size(w->todo)) {
		PyObject *node;
		int r = todo_pop(w->todo, w->seen, &node);

		if (r > 0) {
			r = visit(w, node);
			Py_DECREF(node);
		}
		if (r < 0)
			return -1;
	}
	return 0;
}

/* The walk's answer, (outs[0], outs[1]) with @ok (else NULL), @w's state put. */
static PyObject *walk_end(struct walk *w, bool ok)
{
	PyObject *ret = ok ? PyTuple_Pack(2, w->outs[0], w->outs[1]) : NULL;

	Py_XDECREF(w->todo);
	Py_XDECREF(w->seen);
	Py_XDECREF(w->outs[0]);
	Py_XDECREF(w->outs[1]);
	return ret;
}

/* One node of _graph_walk(): unless a call closed before the walk's floor tagged it (it
 * is tagged the call's own if untagged), its edges: (node, j, key_in[key]) into outs[0]
 * for an edge into the call's inputs, the key into outs[1] for one into its outputs, the
 * next node onto todo unless the walk does not go there. Return: 0, or -1 with an
 * exception. */
static int walk_node(struct walk *w, PyObject *node)
{
	PyObject *next;
	int ret = node_tag(node, w->meta_key, w->floor, w->c1);

	if (ret != 0)
		return ret < 0 ? -1 : 0;
	next = next_of(node, "_graph_walk");
	if (!next)
		return -1;
	ret = -1;
	for (Py_ssize_t j = 0; j < PyTuple_Size(next); j++) {
		PyObject *edge = PyTuple_GetItem(next, j), *nxt = PyTuple_GetItem(edge, 0);
		PyObject *key, *slots;
		int r;

		if (nxt == Py_None)
			continue;
		key = edge_key(nxt, PyTuple_GetItem(edge, 1));
		if (!key)
			goto out;
		slots = PyDict_GetItemWithError(w->key_in, key);
		if (slots) {
			PyObject *jo = PyLong_FromSsize_t(j), *t = jo ? PyTuple_Pack(3, node, jo, slots)
								      : NULL;

			Py_XDECREF(jo);
			r = t ? PyList_Append(w->outs[0], t) : -1;
			Py_XDECREF(t);
			Py_DECREF(key);
			if (r < 0)
				goto out;
			continue;
		}
		r = PyErr_Occurred() ? -1 : PyDict_Contains(w->key_out, key);
		if (r > 0)
			r = PySet_Add(w->outs[1], key);
		Py_DECREF(key);
		if (r < 0 || todo_push(w->todo, nxt, w->accumulate, w->in_nodes, w->seen) < 0)
			goto out;
	}
	ret = 0;
out:
	Py_DECREF(next);
	return ret;
}

/* _graph_walk(todo, in_nodes, key_in, key_out, meta_key, c0, c1, AccumulateGrad)
 *   -> (mine, inside_out); see _hook_backward(). */
static PyObject *graph_walk(PyObject *self, PyObject *args)
{
	struct walk w = { 0 };
	PyObject *todo_in;

	(void)self;
	if (!PyArg_ParseTuple(args, "O!O!O!O!OlO!O:_graph_walk", &PyList_Type, &todo_in,
			      &PySet_Type, &w.in_nodes, &PyDict_Type, &w.key_in, &PyDict_Type,
			      &w.key_out, &w.meta_key, &w.floor, &PyLong_Type, &w.c1,
			      &w.accumulate))
		return NULL;
	return walk_end(&w, walk_begin(&w, todo_in, true) == 0 && walk_run(&w, walk_node) == 0);
}

/* @node's record (its metadata[@meta_key]) as a new reference, None where it has none (or
 * an empty one); NULL with an exception. */
static PyObject *node_meta(PyObject *node, PyObject *meta_key)
{
	PyObject *md = PyObject_GetAttr(node, s_metadata), *m;

	if (!md)
		return NULL;
	m = md_get(md, meta_key);
	Py_DECREF(md);
	if (!m) {
		if (PyErr_Occurred())
			return NULL;
		Py_RETURN_NONE;
	}
	if (!PyDict_Check(m)) {
		Py_DECREF(m);
		PyErr_SetString(PyExc_TypeError, "_graph_reach: a node's record is not a dict");
		return NULL;
	}
	if (PyDict_Size(m) == 0) {
		Py_DECREF(m);
		Py_RETURN_NONE;
	}
	return m;
}

/* Whether the record @m (a dict or None) holds @key: 1, 0, or -1 with an exception. */
static int meta_has(PyObject *m, PyObject *key)
{
	return m == Py_None ? 0 : PyDict_Contains(m, key);
}

/* One reached node's edges (its record's tag @tag, None for none): (node, tag, j, nr, record)
 * into outs[1] for an edge into a node whose record holds a deferred call or views'
 * outputs, the next node onto todo unless seen or an AccumulateGrad. Return: 0, or -1. */
static int reach_edges(struct walk *w, PyObject *node, PyObject *tag)
{
	PyObject *next = next_of(node, "_graph_reach");
	int ret = -1;

	if (!next)
		return -1;
	for (Py_ssize_t j = 0; j < PyTuple_Size(next); j++) {
		PyObject *edge = PyTuple_GetItem(next, j), *nxt = PyTuple_GetItem(edge, 0), *mn;
		int r;

		if (nxt == Py_None)
			continue;
		mn = node_meta(nxt, w->meta_key);
		if (!mn)
			goto out;
		r = meta_has(mn, s_deferred);
		if (r == 0)
			r = meta_has(mn, s_view_outs);
		if (r > 0) {
			PyObject *jo = PyLong_FromSsize_t(j);
			PyObject *t = jo ? PyTuple_Pack(5, node, tag, jo, PyTuple_GetItem(edge, 1),
							mn) : NULL;

			Py_XDECREF(jo);
			r = t ? PyList_Append(w->outs[1], t) : -1;
			Py_XDECREF(t);
		}
		Py_DECREF(mn);
		if (r < 0 || todo_push(w->todo, nxt, w->accumulate, NULL, w->seen) < 0)
			goto out;
	}
	ret = 0;
out:
	Py_DECREF(next);
	return ret;
}

/* One node of _graph_reach(): its record into outs[0] if it watches a view, then unless a
 * call closed before the walk's floor tagged it, its edges (reach_edges()). Return: 0, or
 * -1 with an exception. */
static int reach_node(struct walk *w, PyObject *node)
{
	PyObject *m = node_meta(node, w->meta_key), *tag = NULL;
	int r;

	if (!m)
		return -1;
	if (m != Py_None)
		tag = PyDict_GetItemWithError(m, s_tag);
	r = !tag && PyErr_Occurred() ? -1 : meta_has(m, s_view_watch);
	if (r > 0)
		r = PyList_Append(w->outs[0], m);
	if (r == 0 && tag && tag != Py_None) {
		long t = PyLong_AsLong(tag);

		r = t == -1 && PyErr_Occurred() ? -1 : t < w->floor;
	}
	if (r == 0)
		r = reach_edges(w, node, tag ? tag : Py_None);
	Py_DECREF(m);
	return r < 0 ? -1 : 0;
}

/* _graph_reach(todo, meta_key, floor, AccumulateGrad) -> (watched, hits); see
 * _resolve_deferred(). */
static PyObject *graph_reach(PyObject *self, PyObject *args)
{
	struct walk w = { 0 };
	PyObject *todo_in;

	(void)self;
	if (!PyArg_ParseTuple(args, "O!OlO:_graph_reach", &PyList_Type, &todo_in, &w.meta_key,
			      &w.floor, &w.accumulate))
		return NULL;
	return walk_end(&w, walk_begin(&w, todo_in, false) == 0 && walk_run(&w, reach_node) == 0);
}

static PyMethodDef autograd_methods[] = {
	{ "_graph_walk", graph_walk, METH_VARARGS,
	  "_graph_walk(todo, in_nodes, key_in, key_out, meta_key, c0, c1, AccumulateGrad) -> "
	  "(mine, inside_out): the graph nodes a module call made (adump.torch)" },
	{ "_graph_reach", graph_reach, METH_VARARGS,
	  "_graph_reach(todo, meta_key, floor, AccumulateGrad) -> (watched, hits): the records "
	  "a backward pass reaches (adump.torch)" },
	{ NULL, NULL, 0, NULL },
};

int pyadump_autograd_init(PyObject *m)
{
	if (!(s_metadata = PyUnicode_InternFromString("metadata")) ||
	    !(s_next_functions = PyUnicode_InternFromString("next_functions")) ||
	    !(s_tag = PyUnicode_InternFromString("tag")) ||
	    !(s_deferred = PyUnicode_InternFromString("deferred")) ||
	    !(s_view_outs = PyUnicode_InternFromString("view_outs")) ||
	    !(s_view_watch = PyUnicode_InternFromString("view_watch")))
		return -1;
	return PyModule_AddFunctions(m, autograd_methods);
}
