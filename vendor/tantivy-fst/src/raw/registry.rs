use crate::raw::build::BuilderNode;
use crate::raw::{CompiledAddr, NONE_ADDRESS};

/// Rows of a new registry's table; it grows up to the size asked for as nodes are compiled (Corvid patch,
/// see PATCHES.md).
const INITIAL_TABLE_SIZE: usize = 64;
/// The table grows once it has been asked about this many times as many nodes as it has cells.
const GROW_AFTER_LOOKUPS_PER_CELL: usize = 2;

#[derive(Debug)]
pub struct Registry {
    table: Vec<RegistryCell>,
    table_size: usize, // number of rows
    mru_size: usize,   // number of columns
    max_table_size: usize,
    lookups: usize, // since the table last grew
}

#[derive(Debug)]
struct RegistryCache<'a> {
    cells: &'a mut [RegistryCell],
}

#[derive(Clone, Debug)]
pub struct RegistryCell {
    addr: CompiledAddr,
    node: BuilderNode,
}

#[derive(Debug)]
pub enum RegistryEntry<'a> {
    Found(CompiledAddr),
    NotFound(&'a mut RegistryCell),
    Rejected,
}

impl Registry {
    /// A registry of at most `table_size` rows of `mru_size` cells. It starts with a small table and grows as
    /// nodes are compiled: an fst of a few hundred keys (tantivy builds one per field for every segment,
    /// however small) then no longer allocates, fills and frees a table of 20,000 cells (~1 MB).
    #[inline]
    pub fn new(table_size: usize, mru_size: usize) -> Registry {
        Registry::with_initial_size(table_size.min(INITIAL_TABLE_SIZE), table_size, mru_size)
    }

    /// A registry that starts with `initial_table_size` rows and grows up to `max_table_size`.
    pub fn with_initial_size(initial_table_size: usize, max_table_size: usize, mru_size: usize) -> Registry {
        let ncells = initial_table_size.checked_mul(mru_size).unwrap();
        max_table_size.checked_mul(mru_size).unwrap();
        Registry {
            table: vec![RegistryCell::none(); ncells],
            table_size: initial_table_size,
            mru_size,
            max_table_size,
            lookups: 0,
        }
    }

    /// Quadruples the table (up to its maximum) once it has been asked about many more nodes than it
    /// holds. The registry is a cache of compiled nodes, so the new table starts empty: forgetting them
    /// only means a node seen again is compiled again, as after any eviction.
    #[inline]
    fn grow_if_full(&mut self) {
        self.lookups += 1;
        if self.table_size < self.max_table_size && self.lookups >= self.table.len() * GROW_AFTER_LOOKUPS_PER_CELL {
            self.table_size = (self.table_size * 4).min(self.max_table_size);
            self.table = vec![RegistryCell::none(); self.table_size * self.mru_size];
            self.lookups = 0;
        }
    }

    #[inline]
    pub fn entry(&mut self, node: &BuilderNode) -> RegistryEntry {
        if self.table.is_empty() {
            return RegistryEntry::Rejected;
        }
        self.grow_if_full();
        let bucket = self.hash(node);
        let start = self.mru_size * bucket;
        let end = start + self.mru_size;
        RegistryCache {
            cells: &mut self.table[start..end],
        }
        .entry(node)
    }

    #[inline]
    fn hash(&self, node: &BuilderNode) -> usize {
        // Basic FNV-1a hash as described:
        // https://en.wikipedia.org/wiki/Fowler%E2%80%93Noll%E2%80%93Vo_hash_function
        //
        // In unscientific experiments, this provides the same compression
        // as `std::hash::SipHasher` but is much much faster.
        const FNV_PRIME: u64 = 1_099_511_628_211;
        let mut h = 14_695_981_039_346_656_037;
        h = (h ^ (node.is_final as u64)).wrapping_mul(FNV_PRIME);
        h = (h ^ node.final_output.value()).wrapping_mul(FNV_PRIME);
        for t in &node.trans {
            h = (h ^ (t.inp as u64)).wrapping_mul(FNV_PRIME);
            h = (h ^ t.out.value()).wrapping_mul(FNV_PRIME);
            h = (h ^ (t.addr as u64)).wrapping_mul(FNV_PRIME);
        }
        (h as usize) % self.table_size
    }
}

impl<'a> RegistryCache<'a> {
    #[inline]
    fn entry(mut self, node: &BuilderNode) -> RegistryEntry<'a> {
        if self.cells.len() == 1 {
            let cell = &mut self.cells[0];
            if !cell.is_none() && &cell.node == node {
                RegistryEntry::Found(cell.addr)
            } else {
                cell.node.clone_from(node);
                RegistryEntry::NotFound(cell)
            }
        } else {
            let find = |c: &RegistryCell| !c.is_none() && &c.node == node;
            if let Some(i) = self.cells.iter().position(find) {
                let addr = self.cells[i].addr;
                self.promote(i); // most recently used
                RegistryEntry::Found(addr)
            } else {
                let last = self.cells.len() - 1;
                self.cells[last].node.clone_from(node); // discard LRU
                self.promote(last);
                RegistryEntry::NotFound(&mut self.cells[0])
            }
        }
    }

    #[inline]
    fn promote(&mut self, mut i: usize) {
        assert!(i < self.cells.len());
        while i > 0 {
            self.cells.swap(i - 1, i);
            i -= 1;
        }
    }
}

impl RegistryCell {
    fn none() -> RegistryCell {
        RegistryCell {
            addr: NONE_ADDRESS,
            node: BuilderNode::default(),
        }
    }

    fn is_none(&self) -> bool {
        self.addr == NONE_ADDRESS
    }

    pub fn insert(&mut self, addr: CompiledAddr) {
        self.addr = addr;
    }
}

#[cfg(test)]
mod tests {
    use super::{Registry, RegistryCache, RegistryCell, RegistryEntry};
    use crate::raw::build::BuilderNode;
    use crate::raw::{Output, Transition};

    fn assert_rejected(entry: RegistryEntry) {
        match entry {
            RegistryEntry::Rejected => {}
            entry => panic!("expected rejected entry, got: {:?}", entry),
        }
    }

    fn assert_not_found(entry: RegistryEntry) {
        match entry {
            RegistryEntry::NotFound(_) => {}
            entry => panic!("expected nout found entry, got: {:?}", entry),
        }
    }

    fn assert_insert_and_found(reg: &mut Registry, bnode: &BuilderNode) {
        match reg.entry(&bnode) {
            RegistryEntry::NotFound(cell) => cell.insert(1234),
            entry => panic!("unexpected not found entry, got: {:?}", entry),
        }
        match reg.entry(&bnode) {
            RegistryEntry::Found(addr) => assert_eq!(addr, 1234),
            entry => panic!("unexpected found entry, got: {:?}", entry),
        }
    }

    #[test]
    fn empty_is_ok() {
        let mut reg = Registry::new(0, 0);
        let bnode = BuilderNode {
            is_final: false,
            final_output: Output::zero(),
            trans: vec![],
        };
        assert_rejected(reg.entry(&bnode));
    }

    #[test]
    fn one_final_is_ok() {
        let mut reg = Registry::new(1, 1);
        let bnode = BuilderNode {
            is_final: true,
            final_output: Output::zero(),
            trans: vec![],
        };
        assert_insert_and_found(&mut reg, &bnode);
    }

    #[test]
    fn one_with_trans_is_ok() {
        let mut reg = Registry::new(1, 1);
        let bnode = BuilderNode {
            is_final: false,
            final_output: Output::zero(),
            trans: vec![Transition {
                addr: 0,
                inp: b'a',
                out: Output::zero(),
            }],
        };
        assert_insert_and_found(&mut reg, &bnode);
        assert_not_found(reg.entry(&BuilderNode {
            is_final: true,
            ..bnode.clone()
        }));
        assert_not_found(reg.entry(&BuilderNode {
            trans: vec![Transition {
                addr: 0,
                inp: b'b',
                out: Output::zero(),
            }],
            ..bnode.clone()
        }));
        assert_not_found(reg.entry(&BuilderNode {
            trans: vec![Transition {
                addr: 0,
                inp: b'a',
                out: Output::new(1),
            }],
            ..bnode.clone()
        }));
    }

    #[test]
    fn cache_works() {
        let mut reg = Registry::new(1, 1);

        let bnode1 = BuilderNode {
            is_final: true,
            ..BuilderNode::default()
        };
        assert_insert_and_found(&mut reg, &bnode1);

        let bnode2 = BuilderNode {
            final_output: Output::new(1),
            ..bnode1.clone()
        };
        assert_insert_and_found(&mut reg, &bnode2);
        assert_not_found(reg.entry(&bnode1));
    }

    #[test]
    fn promote() {
        let bn = BuilderNode::default();
        let mut bnodes = vec![
            RegistryCell {
                addr: 1,
                node: bn.clone(),
            },
            RegistryCell {
                addr: 2,
                node: bn.clone(),
            },
            RegistryCell {
                addr: 3,
                node: bn.clone(),
            },
            RegistryCell {
                addr: 4,
                node: bn.clone(),
            },
        ];
        let mut cache = RegistryCache { cells: &mut bnodes };

        cache.promote(0);
        assert_eq!(cache.cells[0].addr, 1);
        assert_eq!(cache.cells[1].addr, 2);
        assert_eq!(cache.cells[2].addr, 3);
        assert_eq!(cache.cells[3].addr, 4);

        cache.promote(1);
        assert_eq!(cache.cells[0].addr, 2);
        assert_eq!(cache.cells[1].addr, 1);
        assert_eq!(cache.cells[2].addr, 3);
        assert_eq!(cache.cells[3].addr, 4);

        cache.promote(3);
        assert_eq!(cache.cells[0].addr, 4);
        assert_eq!(cache.cells[1].addr, 2);
        assert_eq!(cache.cells[2].addr, 1);
        assert_eq!(cache.cells[3].addr, 3);

        cache.promote(2);
        assert_eq!(cache.cells[0].addr, 1);
        assert_eq!(cache.cells[1].addr, 4);
        assert_eq!(cache.cells[2].addr, 2);
        assert_eq!(cache.cells[3].addr, 3);
    }

    // Corvid patch (PATCHES.md): the table starts small and grows to the size asked for.
    fn final_node(output: u64) -> BuilderNode {
        BuilderNode {
            is_final: true,
            final_output: Output::new(output),
            trans: vec![],
        }
    }

    #[test]
    fn table_starts_small_and_grows_to_its_maximum() {
        let mut reg = Registry::new(10_000, 2);
        assert_eq!(reg.table.len(), 64 * 2);
        for i in 0..1_000_000u64 {
            if let RegistryEntry::NotFound(cell) = reg.entry(&final_node(i)) {
                cell.insert(i as usize + 16);
            }
            assert!(reg.table_size <= 10_000);
        }
        assert_eq!(reg.table_size, 10_000);
        assert_eq!(reg.table.len(), 20_000);
    }

    #[test]
    fn a_small_maximum_is_the_table_from_the_start() {
        let reg = Registry::new(10, 3);
        assert_eq!(reg.table.len(), 30);
    }

    #[test]
    fn nodes_are_found_between_growths() {
        let mut reg = Registry::new(10_000, 2);
        for i in 0..100_000u64 {
            let node = final_node(i);
            match reg.entry(&node) {
                RegistryEntry::NotFound(cell) => cell.insert(i as usize + 16),
                entry => panic!("a new node was found: {:?}", entry),
            }
            let before = reg.table_size;
            match reg.entry(&node) {
                RegistryEntry::Found(addr) => assert_eq!(addr, i as usize + 16),
                // Only a table that has just grown has forgotten it.
                RegistryEntry::NotFound(_) => assert!(reg.table_size > before),
                RegistryEntry::Rejected => panic!("a registry with cells rejected a node"),
            }
        }
    }
}
