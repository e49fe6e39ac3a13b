raise ImportError("this extension is broken on purpose")
