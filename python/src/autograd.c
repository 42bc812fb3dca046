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

/* One node's edges: (node, j, key_in[key]) into @mine for an edge into the call's inputs,
 * the key into @inside_out for one into its outputs, the next node onto @todo unless the
 * walk does not go there. Return: 0, or -1 with an exception. */
static int node_edges(PyObject *node, PyObject *key_in, PyObject *key_out, PyObject *in_nodes,
		      PyObject *accumulate, PyObject *seen, PyObject *mine, PyObject *inside_out,
		      PyObject *todo)
{
	PyObject *next = PyObject_GetAttr(node, s_next_functions);
	Py_ssize_t n;
	int ret = -1;

	if (!next)
		return -1;
	if (!PyTuple_Check(next)) {
		PyErr_SetString(PyExc_TypeError, "_graph_walk: next_functions is not a tuple");
		goto out;
	}
	n = PyTuple_Size(next);
	for (Py_ssize_t j = 0; j < n; j++) {
		PyObject *edge = PyTuple_GetItem(next, j), *nxt, *key, *slots, *id;
		int r;

		if (!PyTuple_Check(edge) || PyTuple_Size(edge) != 2) {
			PyErr_SetString(PyExc_TypeError, "_graph_walk: an edge is not a pair");
			goto out;
		}
		nxt = PyTuple_GetItem(edge, 0);
		if (nxt == Py_None)
			continue;
		key = edge_key(nxt, PyTuple_GetItem(edge, 1));
		if (!key)
			goto out;
		slots = PyDict_GetItemWithError(key_in, key);
		if (slots) {
			PyObject *jo = PyLong_FromSsize_t(j), *t = jo ? PyTuple_Pack(3, node, jo, slots)
								      : NULL;

			Py_XDECREF(jo);
			r = t ? PyList_Append(mine, t) : -1;
			Py_XDECREF(t);
			Py_DECREF(key);
			if (r < 0)
				goto out;
			continue;
		}
		r = PyErr_Occurred() ? -1 : PyDict_Contains(key_out, key);
		if (r > 0)
			r = PySet_Add(inside_out, key);
		Py_DECREF(key);
		if (r < 0)
			goto out;
		if ((PyObject *)Py_TYPE(nxt) == accumulate)
			continue;
		id = PyLong_FromVoidPtr(nxt);
		if (!id)
			goto out;
		r = PySet_Contains(in_nodes, id);
		if (r == 0)
			r = PyDict_Contains(seen, id);
		Py_DECREF(id);
		if (r < 0 || (r == 0 && PyList_Append(todo, nxt) < 0))
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
	PyObject *todo_in, *in_nodes, *key_in, *key_out, *meta_key, *c1, *accumulate;
	PyObject *todo = NULL, *seen = NULL, *mine = NULL, *inside_out = NULL, *ret = NULL;
	long c0;

	(void)self;
	if (!PyArg_ParseTuple(args, "O!O!O!O!OlO!O:_graph_walk", &PyList_Type, &todo_in,
			      &PySet_Type, &in_nodes, &PyDict_Type, &key_in, &PyDict_Type,
			      &key_out, &meta_key, &c0, &PyLong_Type, &c1, &accumulate))
		return NULL;
	todo = PyList_GetSlice(todo_in, 0, PyList_Size(todo_in));
	seen = PyDict_New();            /* id -> node: held, so no id comes back meanwhile */
	mine = PyList_New(0);
	inside_out = PySet_New(NULL);
	if (!todo || !seen || !mine || !inside_out)
		goto out;
	while (PyList_Size(todo)) {
		Py_ssize_t last = PyList_Size(todo) - 1;
		PyObject *node = PyList_GetItem(todo, last), *id;
		int r;

		Py_INCREF(node);
		if (PyList_SetSlice(todo, last, last + 1, NULL) < 0) {
			Py_DECREF(node);
			goto out;
		}
		id = PyLong_FromVoidPtr(node);
		r = id ? PyDict_Contains(seen, id) : -1;
		if (r == 0)
			r = PyDict_SetItem(seen, id, node) < 0 ? -1 : 0;
		Py_XDECREF(id);
		if (r == 0)
			r = node_tag(node, meta_key, c0, c1);
		if (r == 0)
			r = node_edges(node, key_in, key_out, in_nodes, accumulate, seen, mine,
				       inside_out, todo);
		Py_DECREF(node);
		if (r < 0)
			goto out;
	}
	ret = PyTuple_Pack(2, mine, inside_out);
out:
	Py_XDECREF(todo);
	Py_XDECREF(seen);
	Py_XDECREF(mine);
	Py_XDECREF(inside_out);
	return ret;
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
 * into @hits for an edge into a node whose record holds a deferred call or views' outputs,
 * the next node onto @todo unless seen or an AccumulateGrad. Return: 0, or -1. */
static int reach_edges(PyObject *node, PyObject *tag, PyObject *meta_key, PyObject *accumulate,
		       PyObject *seen, PyObject *hits, PyObject *todo)
{
	PyObject *next = PyObject_GetAttr(node, s_next_functions);
	Py_ssize_t n;
	int ret = -1;

	if (!next)
		return -1;
	if (!PyTuple_Check(next)) {
		PyErr_SetString(PyExc_TypeError, "_graph_reach: next_functions is not a tuple");
		goto out;
	}
	n = PyTuple_Size(next);
	for (Py_ssize_t j = 0; j < n; j++) {
		PyObject *edge = PyTuple_GetItem(next, j), *nxt, *mn, *id;
		int r;

		if (!PyTuple_Check(edge) || PyTuple_Size(edge) != 2) {
			PyErr_SetString(PyExc_TypeError, "_graph_reach: an edge is not a pair");
			goto out;
		}
		nxt = PyTuple_GetItem(edge, 0);
		if (nxt == Py_None)
			continue;
		mn = node_meta(nxt, meta_key);
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
			r = t ? PyList_Append(hits, t) : -1;
			Py_XDECREF(t);
		}
		Py_DECREF(mn);
		if (r < 0)
			goto out;
		if ((PyObject *)Py_TYPE(nxt) == accumulate)
			continue;
		id = PyLong_FromVoidPtr(nxt);
		if (!id)
			goto out;
		r = PyDict_Contains(seen, id);
		Py_DECREF(id);
		if (r < 0 || (r == 0 && PyList_Append(todo, nxt) < 0))
			goto out;
	}
	ret = 0;
out:
	Py_DECREF(next);
	return ret;
}

/* _graph_reach(todo, meta_key, floor, AccumulateGrad) -> (watched, hits); see
 * _resolve_deferred(). */
static PyObject *graph_reach(PyObject *self, PyObject *args)
{
	PyObject *todo_in, *meta_key, *accumulate;
	PyObject *todo = NULL, *seen = NULL, *watched = NULL, *hits = NULL, *ret = NULL;
	long floor;

	(void)self;
	if (!PyArg_ParseTuple(args, "O!OlO:_graph_reach", &PyList_Type, &todo_in, &meta_key,
			      &floor, &accumulate))
		return NULL;
	todo = PyList_GetSlice(todo_in, 0, PyList_Size(todo_in));
	seen = PyDict_New();            /* id -> node: held, so no id comes back meanwhile */
	watched = PyList_New(0);
	hits = PyList_New(0);
	if (!todo || !seen || !watched || !hits)
		goto out;
	while (PyList_Size(todo)) {
		Py_ssize_t last = PyList_Size(todo) - 1;
		PyObject *node = PyList_GetItem(todo, last), *id, *m = NULL, *tag = NULL;
		int r;

		Py_INCREF(node);
		if (PyList_SetSlice(todo, last, last + 1, NULL) < 0) {
			Py_DECREF(node);
			goto out;
		}
		id = PyLong_FromVoidPtr(node);
		r = id ? PyDict_Contains(seen, id) : -1;
		if (r == 0)
			r = PyDict_SetItem(seen, id, node) < 0 ? -1 : 0;
		else if (r > 0)
			r = 1;          /* seen: nothing more */
		Py_XDECREF(id);
		if (r == 0) {
			m = node_meta(node, meta_key);
			r = m ? 0 : -1;
		}
		if (r == 0) {
			tag = m == Py_None ? NULL : PyDict_GetItemWithError(m, s_tag);
			r = !tag && PyErr_Occurred() ? -1 : meta_has(m, s_view_watch);
			if (r > 0)
				r = PyList_Append(watched, m);
		}
		if (r == 0 && tag && tag != Py_None) {
			long t = PyLong_AsLong(tag);

			r = t == -1 && PyErr_Occurred() ? -1 : t < floor;
		}
		if (r == 0)
			r = reach_edges(node, tag ? tag : Py_None, meta_key, accumulate, seen, hits,
					todo);
		Py_XDECREF(m);
		Py_DECREF(node);
		if (r < 0)
			goto out;
	}
	ret = PyTuple_Pack(2, watched, hits);
out:
	Py_XDECREF(todo);
	Py_XDECREF(seen);
	Py_XDECREF(watched);
	Py_XDECREF(hits);
	return ret;
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
